/**
 * The command line of `relock`, on Node's own `util.parseArgs` (no dependency): commands declared as
 * data, their options parsed and checked, and help in the layout of commander (which the command used
 * before) so that `--help` reads as it always did.
 */
import { parseArgs } from 'node:util';
import { CliError, EXIT } from './errors.js';

/** One option: `flags` as in the help (`'--limit <n>'`, `'-y, --yes'`, `'--json'`); a `<value>` makes it take one. */
export interface OptionSpec {
  readonly flags: string;
  readonly description: string;
  /** The value when the option is not given (after `env`); shown in the help. */
  readonly default?: string | number;
  /** An environment variable read when the option is not given. */
  readonly env?: string;
  /** The values accepted; anything else is a usage error. */
  readonly choices?: readonly string[];
  /** Turns the text into the option's value; what it throws is a usage error naming the option. */
  readonly parse?: (value: string) => unknown;
}

/**
 * One command: `relock <name> <argument> [options]`. `run` gets the argument and the options by their
 * camel-cased long names (`--scan-count` → `scanCount`), and resolves to the exit code. `CommandSpec`
 * (options `never`) stands for any command.
 */
export interface CommandSpec<O = never> {
  readonly name: string;
  readonly description: string;
  readonly argument: { readonly name: string; readonly description: string; readonly required: boolean; readonly default?: string };
  readonly options: readonly OptionSpec[];
  run(argument: string, options: O): Promise<number>;
}

/** The whole program: its commands, version and the text shown after the help. */
export interface ProgramSpec {
  readonly name: string;
  readonly description: string;
  readonly version: string;
  readonly commands: readonly CommandSpec[];
  readonly helpAfter: string;
}

/** A usage error (exit code 2), printed as commander printed them: `error: …` and a hint. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT.usage);
    this.name = 'UsageError';
  }
}

/**
 * What the command line asks for: text to print and the exit code (help and the version: stdout and 0;
 * the program's help for a missing command: stderr and 2), or a command to run.
 */
export type Parsed = { readonly print: string; readonly exitCode: number } | { readonly command: CommandSpec; readonly argument: string; readonly options: Record<string, unknown> };

const HELP: OptionSpec = { flags: '-h, --help', description: 'display help for command' };
const VERSION: OptionSpec = { flags: '-V, --version', description: 'output the version number' };

/** Parses `args` (without `node` and the script); throws `UsageError`. */
export function parseCommandLine(program: ProgramSpec, args: readonly string[]): Parsed {
  const [first, ...rest] = args;
  if (first === undefined) return { print: programHelp(program), exitCode: EXIT.usage };
  if (first === '-h' || first === '--help') return { print: programHelp(program), exitCode: EXIT.ok };
  if (first === '-V' || first === '--version') return { print: `${program.version}\n`, exitCode: EXIT.ok };
  if (first === 'help') {
    if (rest[0] === undefined) return { print: programHelp(program), exitCode: EXIT.ok };
    return { print: commandHelp(program, commandNamed(program, rest[0])), exitCode: EXIT.ok };
  }
  if (first.startsWith('-')) throw new UsageError(`unknown option '${first}'`);
  const command = commandNamed(program, first);
  const { tokens } = parseArgs({ args: [...rest], options: parserOptions(command), allowPositionals: true, strict: false, tokens: true });
  const values: Record<string, unknown> = {};
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') positionals.push(token.value);
    if (token.kind !== 'option') continue;
    if (token.name === 'help') return { print: commandHelp(program, command), exitCode: EXIT.ok };
    const option = command.options.find((o) => longName(o) === token.name);
    if (!option) throw new UsageError(`unknown option '${token.rawName}'${suggestion(token.rawName, command.options.map((o) => `--${longName(o)}`))}`);
    if (!takesValue(option)) {
      if (token.inlineValue) throw new UsageError(`option '${option.flags}' takes no value (got '${token.rawName}=${token.value}')`);
      values[key(option)] = true;
    } else {
      if (token.value === undefined) throw new UsageError(`option '${option.flags}' argument missing`);
      values[key(option)] = valueOf(option, token.value);
    }
  }
  for (const option of command.options) {
    if (values[key(option)] !== undefined) continue;
    const fromEnv = option.env === undefined ? undefined : process.env[option.env];
    if (fromEnv !== undefined && fromEnv !== '') values[key(option)] = valueOf(option, fromEnv);
    else if (option.default !== undefined) values[key(option)] = option.default;
  }
  const { argument } = command;
  if (positionals.length > 1) throw new UsageError(`too many arguments for '${command.name}'. Expected 1 argument but got ${positionals.length}.`);
  const value = positionals[0] ?? argument.default;
  if (value === undefined) throw new UsageError(`missing required argument '${argument.name}'`);
  return { command, argument: value, options: values };
}

function commandNamed(program: ProgramSpec, name: string): CommandSpec {
  const command = program.commands.find((c) => c.name === name);
  if (!command) throw new UsageError(`unknown command '${name}'${suggestion(name, program.commands.map((c) => c.name))}`);
  return command;
}

function parserOptions(command: CommandSpec): Record<string, { type: 'string' | 'boolean'; short?: string }> {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const option of command.options) {
    const short = /^-(\w),/.exec(option.flags)?.[1];
    options[longName(option)] = { type: takesValue(option) ? 'string' : 'boolean', ...(short ? { short } : {}) };
  }
  return options;
}

function valueOf(option: OptionSpec, text: string): unknown {
  if (option.choices && !option.choices.includes(text)) {
    throw new UsageError(`option '${option.flags}' argument '${text}' is invalid. Allowed choices are ${option.choices.join(', ')}.`);
  }
  if (!option.parse) return text;
  try {
    return option.parse(text);
  } catch (error) {
    throw new UsageError(`option '${option.flags}' argument '${text}' is invalid. ${(error as Error).message}`);
  }
}

/** `'--scan-count <n>'` → `'scan-count'`. */
const longName = (option: OptionSpec): string => /--([\w-]+)/.exec(option.flags)![1];
/** `'scan-count'` → `'scanCount'`, the key of the parsed options. */
const key = (option: OptionSpec): string => longName(option).replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
const takesValue = (option: OptionSpec): boolean => option.flags.includes('<');

/** `(Did you mean inspect?)` for a near miss: a prefix of it, or two edits away at most. */
function suggestion(given: string, known: readonly string[]): string {
  const near = known.find((k) => (given.length >= 2 && k.startsWith(given)) || editDistance(given, k) <= 2);
  return near === undefined ? '' : `\n(Did you mean ${near}?)`;
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length];
}

/** The program's help: usage, description, options and commands, then `helpAfter`. */
export function programHelp(program: ProgramSpec): string {
  const commands = program.commands.map((c): [string, string] => [`${c.name} [options] ${argumentTerm(c)}`, c.description]);
  commands.push(['help [command]', 'display help for command']);
  const options = [VERSION, HELP].map((o): [string, string] => [o.flags, o.description]);
  const width = Math.max(...[...commands, ...options].map(([term]) => term.length));
  return [
    `Usage: ${program.name} [options] [command]`,
    '',
    program.description,
    '',
    'Options:',
    ...options.map((item) => formatItem(item, width)),
    '',
    'Commands:',
    ...commands.map((item) => formatItem(item, width)),
    '',
    program.helpAfter,
  ].join('\n') + '\n';
}

/** A command's help: usage, description, its argument and its options with defaults, environment and choices. */
export function commandHelp(program: ProgramSpec, command: CommandSpec): string {
  const { argument } = command;
  const args: [string, string][] = [[argument.name, argument.description + (argument.default !== undefined ? ` (default: ${JSON.stringify(argument.default)})` : '')]];
  const options = [...command.options, HELP].map((o): [string, string] => [o.flags, o.description + extras(o)]);
  const width = Math.max(...[...args, ...options].map(([term]) => term.length));
  return [
    `Usage: ${program.name} ${command.name} [options] ${argumentTerm(command)}`,
    '',
    command.description,
    '',
    'Arguments:',
    ...args.map((item) => formatItem(item, width)),
    '',
    'Options:',
    ...options.map((item) => formatItem(item, width)),
  ].join('\n') + '\n';
}

const argumentTerm = (c: CommandSpec): string => (c.argument.required ? `<${c.argument.name}>` : `[${c.argument.name}]`);

/** ` (choices: …, default: …, env: …)` as commander shows them. */
function extras(option: OptionSpec): string {
  const parts = [
    ...(option.choices ? [`choices: ${option.choices.map((c) => JSON.stringify(c)).join(', ')}`] : []),
    ...(option.default !== undefined ? [`default: ${JSON.stringify(option.default)}`] : []),
    ...(option.env !== undefined ? [`env: ${option.env}`] : []),
  ];
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

/** `  term   description`, the description wrapped to the terminal (80 columns when not one). */
function formatItem([term, description]: [string, string], width: number): string {
  const columns = process.stdout.isTTY ? process.stdout.columns : 80;
  const indent = 2 + width + 2;
  const lines: string[] = [];
  let line = '';
  for (const word of description.split(' ')) {
    if (line !== '' && indent + line.length + 1 + word.length > columns) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  lines.push(line);
  return `  ${term.padEnd(width)}  ${lines.join(`\n${' '.repeat(indent)}`)}`;
}
