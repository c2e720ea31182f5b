/**
 * Mechanical mutation of a Lua script's source, for the generated Lua pass of `npm run mutants -- --lua`
 * (lua-catalogue.ts). Nothing here is chosen by hand: every comparison operator, every `if` guard, every
 * early `return` and every write command in the source yields one mutant each:
 * - `comparison`: `<` ↔ `<=`, `>` ↔ `>=`, `==` ↔ `~=`;
 * - `negate-if`: `if C then` (or `elseif C then`) becomes `if not (C) then`;
 * - `drop-return`: a `return …` directly inside an `if` block (an early return) is removed;
 * - `drop-write`: a `redis.call(...)` / `redis.pcall(...)` of a write command (`WRITE_COMMANDS`, or a
 *   command held in a variable whose name says publish) is removed when it is a statement, and replaced by
 *   `false` when its value is used (the caller then sees no result of a write that never happened).
 * Strings and comments are never mutated. Line numbers are 1-based, in the script's whole source (the
 * generated header binding KEYS and ARGV included), as `Script.source` holds it.
 */

/** One generated change of a script's source. */
export interface LuaMutant {
  readonly kind: 'comparison' | 'negate-if' | 'drop-return' | 'drop-write';
  /** 1-based line of the mutated token in the script's source. */
  readonly line: number;
  /** What was changed, such as "`<` → `<=`" or "drop `redis.call('del', lock)`". */
  readonly operator: string;
  /** The whole mutated source. */
  readonly source: string;
}

/** Redis commands that write (change a key or publish): dropping one is a `drop-write` mutant. */
export const WRITE_COMMANDS: ReadonlySet<string> = new Set([
  'set', 'setnx', 'setex', 'psetex', 'getset', 'getdel', 'append', 'incr', 'incrby', 'incrbyfloat', 'decr', 'decrby',
  'del', 'unlink', 'expire', 'pexpire', 'expireat', 'pexpireat', 'persist', 'rename', 'copy',
  'hset', 'hsetnx', 'hmset', 'hdel', 'hincrby', 'hincrbyfloat',
  'zadd', 'zrem', 'zincrby', 'zremrangebyscore', 'zremrangebyrank', 'zpopmin', 'zpopmax',
  'lpush', 'rpush', 'lpop', 'rpop', 'lrem', 'ltrim', 'lset', 'sadd', 'srem', 'spop', 'xadd', 'publish', 'spublish',
]);

const FLIP: Readonly<Record<string, string>> = { '<': '<=', '<=': '<', '>': '>=', '>=': '>', '==': '~=', '~=': '==' };

interface Token {
  /** `name` (identifiers and keywords), `string`, `number` or `op` (everything else). */
  readonly type: 'name' | 'string' | 'number' | 'op';
  readonly text: string;
  /** Offset of the first character in the source. */
  readonly start: number;
  /** Offset after the last character. */
  readonly end: number;
  readonly line: number;
}

/** Thrown on Lua the tokenizer does not understand (an unterminated string or long bracket). */
export class LuaTokenizeError extends Error {
  constructor(message: string, line: number) {
    super(`Lua source line ${line}: ${message}`);
    this.name = 'LuaTokenizeError';
  }
}

const OPS = ['...', '..', '==', '~=', '<=', '>=', '<', '>', '=', '(', ')', '{', '}', '[', ']', ';', ':', ',', '.', '+', '-', '*', '/', '%', '^', '#'];

/** The tokens of `source`, comments and whitespace left out. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  const longBracket = (at: number): number => {
    // `[[`, `[=[`, … : the offset after the matching close, or -1 when `at` opens none.
    const open = /^\[(=*)\[/.exec(source.slice(at, at + 64));
    if (!open) return -1;
    const close = source.indexOf(`]${open[1]}]`, at + open[0].length);
    if (close < 0) throw new LuaTokenizeError('unterminated long bracket', line);
    return close + open[1].length + 2;
  };
  while (i < source.length) {
    const c = source[i];
    if (c === '\n') {
      line++;
      i++;
    } else if (/\s/.test(c)) {
      i++;
    } else if (source.startsWith('--', i)) {
      const end = longBracket(i + 2);
      const stop = end >= 0 ? end : source.indexOf('\n', i) < 0 ? source.length : source.indexOf('\n', i);
      line += (source.slice(i, stop).match(/\n/g) ?? []).length;
      i = stop;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < source.length && source[j] !== c) {
        if (source[j] === '\n') throw new LuaTokenizeError('unterminated string', line);
        j += source[j] === '\\' ? 2 : 1;
      }
      if (j >= source.length) throw new LuaTokenizeError('unterminated string', line);
      tokens.push({ type: 'string', text: source.slice(i, j + 1), start: i, end: j + 1, line });
      i = j + 1;
    } else if (c === '[' && longBracket(i) >= 0) {
      const end = longBracket(i);
      tokens.push({ type: 'string', text: source.slice(i, end), start: i, end, line });
      line += (source.slice(i, end).match(/\n/g) ?? []).length;
      i = end;
    } else if (/[A-Za-z_]/.test(c)) {
      const text = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(i))![0];
      tokens.push({ type: 'name', text, start: i, end: i + text.length, line });
      i += text.length;
    } else if (/[0-9]/.test(c)) {
      const text = /^(0[xX][0-9a-fA-F]+|[0-9]*\.?[0-9]+([eE][+-]?[0-9]+)?)/.exec(source.slice(i))![0];
      tokens.push({ type: 'number', text, start: i, end: i + text.length, line });
      i += text.length;
    } else {
      const op = OPS.find((o) => source.startsWith(o, i));
      if (!op) throw new LuaTokenizeError(`unexpected character ${JSON.stringify(c)}`, line);
      tokens.push({ type: 'op', text: op, start: i, end: i + op.length, line });
      i += op.length;
    }
  }
  return tokens;
}

const isName = (token: Token | undefined, ...names: string[]): boolean => token?.type === 'name' && names.includes(token.text);
const isOp = (token: Token | undefined, ...ops: string[]): boolean => token?.type === 'op' && ops.includes(token.text);

/** The index of the token closing the bracket opened at `open` (`(`, `{` or `[`). */
function closing(tokens: readonly Token[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    if (isOp(tokens[i], '(', '{', '[')) depth++;
    else if (isOp(tokens[i], ')', '}', ']') && --depth === 0) return i;
  }
  throw new LuaTokenizeError('unbalanced brackets', tokens[open].line);
}

/**
 * For each token index, the kind of block it is directly in: `chunk` (top level), `function`, `if`
 * (then/elseif/else parts), `loop` (for/while/repeat bodies) or `do`.
 */
function blocks(tokens: readonly Token[]): string[] {
  const stack = ['chunk'];
  const inside: string[] = [];
  let loopHeader = false;
  for (const token of tokens) {
    inside.push(stack[stack.length - 1]);
    if (token.type !== 'name') continue;
    switch (token.text) {
      case 'function':
      case 'if':
        stack.push(token.text);
        break;
      case 'for':
      case 'while':
        loopHeader = true;
        break;
      case 'do':
        stack.push(loopHeader ? 'loop' : 'do');
        loopHeader = false;
        break;
      case 'repeat':
        stack.push('loop');
        break;
      case 'end':
      case 'until':
        stack.pop();
        break;
    }
  }
  return inside;
}

/** The tokens that end a statement list: a `return`'s expression stops before one of them at depth 0. */
const BLOCK_END = ['end', 'else', 'elseif', 'until'];

/** The index after the last token of the `return` at `at`. */
function returnEnd(tokens: readonly Token[], at: number): number {
  let i = at + 1;
  while (i < tokens.length && !isName(tokens[i], ...BLOCK_END)) {
    if (isOp(tokens[i], ';')) return i + 1;
    i = isOp(tokens[i], '(', '{', '[') ? closing(tokens, i) + 1 : isName(tokens[i], 'function') ? functionEnd(tokens, i) + 1 : i + 1;
  }
  return i;
}

/** The index of the `end` closing the `function` at `at` (blocks open at function, if, do, repeat). */
function functionEnd(tokens: readonly Token[], at: number): number {
  let depth = 0;
  for (let i = at; i < tokens.length; i++) {
    if (isName(tokens[i], 'function', 'if', 'do', 'repeat')) depth++;
    else if (isName(tokens[i], 'end', 'until') && --depth === 0) return i;
  }
  throw new LuaTokenizeError('function without end', tokens[at].line);
}

/** Tokens after which a `redis.call` starts a new statement (it is not part of an expression). */
function startsStatement(previous: Token | undefined): boolean {
  if (previous === undefined) return true;
  if (previous.type === 'name') return !['return', 'local', 'not', 'and', 'or', 'if', 'elseif', 'while', 'until', 'in'].includes(previous.text);
  if (previous.type === 'op') return [')', ']', '}', ';'].includes(previous.text);
  return true;
}

/** The write command a `redis.call(`/`redis.pcall(` at `at` runs, or undefined when it is no write. */
function writeCommand(tokens: readonly Token[], at: number): string | undefined {
  if (!(isName(tokens[at], 'redis') && isOp(tokens[at + 1], '.') && isName(tokens[at + 2], 'call', 'pcall') && isOp(tokens[at + 3], '('))) return undefined;
  const first = tokens[at + 4];
  if (first?.type === 'string') {
    const command = first.text.slice(1, -1).toLowerCase();
    return WRITE_COMMANDS.has(command) ? command : undefined;
  }
  return first?.type === 'name' && /publish/i.test(first.text) ? first.text : undefined;
}

const splice = (source: string, start: number, end: number, text: string): string => source.slice(0, start) + text + source.slice(end);
const shown = (text: string): string => (text.length > 60 ? `${text.slice(0, 57)}…` : text).replace(/\s+/g, ' ');

/** Every mutant of `source` (see the module's comment), in source order within each kind. */
export function luaMutants(source: string): LuaMutant[] {
  const tokens = tokenize(source);
  const inside = blocks(tokens);
  const out: LuaMutant[] = [];
  tokens.forEach((token) => {
    if (token.type === 'op' && FLIP[token.text]) {
      out.push({ kind: 'comparison', line: token.line, operator: `\`${token.text}\` → \`${FLIP[token.text]}\``, source: splice(source, token.start, token.end, FLIP[token.text]) });
    }
  });
  tokens.forEach((token, i) => {
    if (!isName(token, 'if', 'elseif')) return;
    let then = i + 1;
    while (then < tokens.length && !isName(tokens[then], 'then')) then = isOp(tokens[then], '(', '{', '[') ? closing(tokens, then) + 1 : then + 1;
    if (then >= tokens.length) throw new LuaTokenizeError(`${token.text} without then`, token.line);
    const from = tokens[i + 1].start;
    const to = tokens[then - 1].end;
    const condition = source.slice(from, to);
    out.push({ kind: 'negate-if', line: token.line, operator: `negate \`${token.text} ${shown(condition)}\``, source: splice(source, from, to, `not (${condition})`) });
  });
  tokens.forEach((token, i) => {
    if (!isName(token, 'return') || inside[i] !== 'if') return;
    const end = returnEnd(tokens, i);
    const text = source.slice(token.start, tokens[end - 1].end);
    out.push({ kind: 'drop-return', line: token.line, operator: `drop \`${shown(text)}\``, source: splice(source, token.start, tokens[end - 1].end, '') });
  });
  tokens.forEach((token, i) => {
    const command = writeCommand(tokens, i);
    if (command === undefined) return;
    const close = closing(tokens, i + 3);
    const call = source.slice(token.start, tokens[close].end);
    const statement = startsStatement(tokens[i - 1]) && !isOp(tokens[close + 1], '.', ':', '[', '(');
    out.push({
      kind: 'drop-write',
      line: token.line,
      operator: `drop \`${shown(call)}\`${statement ? '' : ' (its value read as false)'}`,
      source: splice(source, token.start, tokens[close].end, statement ? '' : 'false'),
    });
  });
  return out;
}
