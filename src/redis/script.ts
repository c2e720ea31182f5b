import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Connection } from './connection.js';
import { deniedBy, replyKindOf } from './replies.js';
import { callFunction, refusal, register } from './functions.js';

/**
 * How relock runs its Lua scripts (`LockClientOptions.scripting`): `'eval'`, EVALSHA (EVAL when the
 * server does not know the script yet); `'functions'`, FCALL / FCALL_RO of relock's Redis Functions
 * library (see functions.ts); `'auto'`, EVALSHA until the server refuses EVALSHA or EVAL to this user
 * (NOPERM), then functions for the rest of the client's life.
 */
export type ScriptingMode = 'eval' | 'functions' | 'auto';

interface Scripting {
  /** Scripts run as functions (from the start, or since `auto` switched). */
  functions: boolean;
  readonly auto: boolean;
  readonly log: Logger;
}

/** The scripting mode of each connection a `LockClient` set one for; any other connection uses EVALSHA. */
const modes = new WeakMap<Connection, Scripting>();

/** Makes every script run on `connection` follow `mode`; `log` tells once when `auto` switches. */
export function useScripting(connection: Connection, mode: ScriptingMode, log: Logger): void {
  modes.set(connection, { functions: mode === 'functions', auto: mode === 'auto', log });
}

/**
 * A Lua script run with EVALSHA, falling back to EVAL when the server does not know it yet (after a
 * restart, a failover or `SCRIPT FLUSH`); EVAL also loads it for the next EVALSHA. Or, when the
 * connection's scripting mode says so, as a function of relock's Functions library. An ACL refusal
 * throws `PermissionError`. This is the transport only: scripts are declared with `defineScript` (named
 * keys and arguments, a parsed reply) or, for the watchdog's batches, `BatchScript`.
 */
export abstract class Script {
  readonly sha: string;
  /** The script only reads: a `no-writes` function, called with `FCALL_RO`. */
  readonly readOnly: boolean;
  protected constructor(
    /** A short name for logs and errors, such as `'lock.acquire'`. */
    readonly name: string,
    /** The whole Lua source, as sent with EVAL and put in the Functions library. */
    readonly source: string,
    readOnly: boolean,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
    this.readOnly = readOnly;
    register(this);
  }

  /**
   * Sends `command`, laid out as `[verb, script, numkeys, ...keys, ...args]` (the first two are filled in
   * here; the first key, if any, routes it). Resolves to the reply as `parse` reads it.
   */
  protected send<R>(connection: Connection, command: string[], parse: (reply: unknown) => R): Promise<R> {
    const firstKey = command[2] === '0' ? undefined : command[3];
    const scripting = modes.get(connection);
    if (scripting?.functions) return this.asFunction(connection, command, parse, firstKey);
    command[0] = 'EVALSHA';
    command[1] = this.sha;
    return this.evalsha(connection, command, parse, firstKey, scripting);
  }

  /**
   * EVALSHA, then `afterEvalsha` when it failed: one `.then` and its error handler's closure, less than
   * an async method's promise, frame and await.
   */
  private evalsha<R>(connection: Connection, command: string[], parse: (reply: unknown) => R, firstKey: string | undefined, scripting: Scripting | undefined): Promise<R> {
    let sent: Promise<unknown>;
    try {
      sent = connection.send(firstKey, command);
    } catch (error) {
      // A client that throws instead of rejecting: the same path as a rejection (never a synchronous throw).
      return this.afterEvalsha(connection, command, parse, firstKey, scripting, error);
    }
    return sent.then(parse, (error: unknown) => this.afterEvalsha(connection, command, parse, firstKey, scripting, error));
  }

  /** Sends `command` as a call of the script's function (see functions.ts). */
  private async asFunction<R>(connection: Connection, command: string[], parse: (reply: unknown) => R, firstKey: string | undefined): Promise<R> {
    return parse(await callFunction(connection, this, firstKey, command));
  }

  /**
   * `send` after EVALSHA failed with `first`: EVAL when the server did not know the script (NOSCRIPT);
   * functions from now on when `auto` finds EVALSHA or EVAL refused (NOPERM); else the error (a
   * `PermissionError` for an ACL refusal).
   */
  private async afterEvalsha<R>(connection: Connection, command: string[], parse: (reply: unknown) => R, firstKey: string | undefined, scripting: Scripting | undefined, first: unknown): Promise<R> {
    try {
      if (!(first instanceof Error) || replyKindOf(first) !== 'noscript') throw first;
      command[0] = 'EVAL';
      command[1] = this.source;
      return parse(await connection.send(firstKey, command));
    } catch (error) {
      const denied = deniedBy(error, command[0].toLowerCase());
      if (scripting?.auto && denied?.permission === 'command' && (denied.command === 'evalsha' || denied.command === 'eval')) {
        if (!scripting.functions) {
          scripting.functions = true;
          scripting.log.warn({ err: error }, `Redis refused ${denied.command.toUpperCase()} to this user (NOPERM): relock runs its scripts as Redis Functions (FCALL) from now on`);
        }
        return parse(await callFunction(connection, this, firstKey, command));
      }
      throw refusal(error, this.name, command[0]);
    }
  }
}

/** Names of a script's keys or arguments, in order: Lua identifiers. */
export type Names = readonly string[];

/**
 * The values of one call of a script declared with keys `K`, arguments `A` and optional lists of more
 * arguments `Rest` and more keys `RestKeys`: one string per name, and each list under its own name.
 */
export type ScriptValues<K extends Names, A extends Names, Rest extends string = never, RestKeys extends string = never> = {
  readonly [N in K[number] | A[number]]: string;
} & { readonly [N in Rest | RestKeys]: readonly string[] };

/** The declaration of a script (see `defineScript`). */
export interface ScriptSpec<K extends Names, A extends Names, R, Rest extends string = never, RestKeys extends string = never> {
  /** A short name for logs, errors and the Functions library, such as `'lock.acquire'`. */
  readonly name: string;
  /** The names of its keys, in KEYS order (all in one slot; the first routes the call). */
  readonly keys: K;
  /** The names of its arguments, in ARGV order. */
  readonly args: A;
  /**
   * The name of a list of arguments after `args` (ids, say). The Lua gets `<rest>From`, the ARGV index
   * of its first element (the list itself stays in ARGV: no `unpack` of a long list).
   */
  readonly rest?: Rest;
  /**
   * The name of a list of keys after `keys` (all the keys of an object, say); the Lua gets
   * `<restKeys>From`, the KEYS index of its first element.
   */
  readonly restKeys?: RestKeys;
  /** The script only reads: a `no-writes` function, called with `FCALL_RO`. */
  readonly readOnly?: boolean;
  /** The Lua body, which reads its keys and arguments by name (the header binding them is generated). */
  readonly lua: string;
  /** Turns the raw reply into what callers get (a Redis error reply rejects before it). */
  readonly parse: (reply: unknown) => R;
}

const LUA_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LUA_RESERVED = new Set(['and', 'break', 'do', 'else', 'elseif', 'end', 'false', 'for', 'function', 'if', 'in', 'local', 'nil', 'not', 'or', 'repeat', 'return', 'then', 'true', 'until', 'while', 'KEYS', 'ARGV', 'redis']);

/**
 * The Lua header binding each declared name to a local: `local lock, latch = KEYS[1], KEYS[2]`, the same
 * for ARGV, and `local <rest>From = <index>` for a list of arguments or keys (`restKeys`). Throws on a
 * name that is no Lua identifier or is declared twice.
 */
export function luaHeader(keys: Names, args: Names, rest?: string, restKeys?: string): string {
  const lists = [...(rest === undefined ? [] : [`${rest}From`]), ...(restKeys === undefined ? [] : [`${restKeys}From`])];
  const all = [...keys, ...args, ...lists];
  for (const name of all) {
    if (!LUA_NAME.test(name) || LUA_RESERVED.has(name)) throw new Error(`script name "${name}" is not a Lua identifier`);
  }
  if (new Set(all).size !== all.length) throw new Error(`script names declared twice: ${all.join(', ')}`);
  const bind = (names: Names, table: string): string => (names.length === 0 ? '' : `local ${names.join(', ')} = ${names.map((_, i) => `${table}[${i + 1}]`).join(', ')}\n`);
  const from = (name: string | undefined, count: number): string => (name === undefined ? '' : `local ${name}From = ${count + 1}\n`);
  return `${bind(keys, 'KEYS')}${bind(args, 'ARGV')}${from(rest, args.length)}${from(restKeys, keys.length)}`;
}

/**
 * A script declared with `defineScript`: `run(connection, values)` sends it with its keys and arguments
 * laid out from `values` by name (one array per call, the layout computed once) and resolves to the
 * reply as its `parse` reads it.
 */
export class TypedScript<V, R> extends Script {
  /** The key names, then the argument names: the command's layout after `numkeys`. */
  private readonly layout: readonly string[];
  private readonly keyCount: number;
  private readonly numKeys: string;
  private readonly rest: string | undefined;
  private readonly restKeys: string | undefined;
  private readonly parse: (reply: unknown) => R;

  constructor(spec: ScriptSpec<Names, Names, R, string, string>) {
    super(spec.name, luaHeader(spec.keys, spec.args, spec.rest, spec.restKeys) + spec.lua, spec.readOnly ?? false);
    this.layout = [...spec.keys, ...spec.args];
    this.keyCount = spec.keys.length;
    this.numKeys = String(spec.keys.length);
    this.rest = spec.rest;
    this.restKeys = spec.restKeys;
    this.parse = spec.parse;
  }

  /**
   * Runs the script once with `values` (see `ScriptValues`); rejects with Redis's error or `PermissionError`.
   * `values` are read at once, into the command, and not kept: a caller may fill one object again for each call.
   */
  run(connection: Connection, values: V): Promise<R> {
    return this.send(connection, this.command(values as Readonly<Record<string, string | readonly string[]>>), this.parse);
  }

  /** `[verb, script, numkeys, ...keys, ...args]` from `named`, the verb and script left for `send`. */
  private command(named: Readonly<Record<string, string | readonly string[]>>): string[] {
    const { layout, keyCount, rest, restKeys } = this;
    let command: string[];
    if (restKeys === undefined) {
      command = new Array<string>(3 + layout.length);
      command[2] = this.numKeys;
      for (let i = 0; i < layout.length; i++) command[3 + i] = named[layout[i]] as string;
    } else {
      const more = named[restKeys] as readonly string[];
      command = ['', '', String(keyCount + more.length)];
      for (let i = 0; i < keyCount; i++) command.push(named[layout[i]] as string);
      command.push(...more);
      for (let i = keyCount; i < layout.length; i++) command.push(named[layout[i]] as string);
    }
    if (rest !== undefined) for (const value of named[rest] as readonly string[]) command.push(value);
    return command;
  }
}

/**
 * Declares a script: its key and argument names once, its Lua body reading them by name (`luaHeader`
 * binds them), and the parser of its reply. A call passes named values and gets the parsed reply:
 * `ACQUIRE.run(connection, { lock, leaseMs, owner, guard, kind })`.
 */
export function defineScript<const K extends Names, const A extends Names, R, const Rest extends string = never, const RestKeys extends string = never>(
  spec: ScriptSpec<K, A, R, Rest, RestKeys>,
): TypedScript<ScriptValues<K, A, Rest, RestKeys>, R> {
  return new TypedScript(spec);
}

/**
 * A batch script of the watchdog (a `RenewalKind`'s): KEYS and ARGV are the concatenation of each hold's
 * keys and arguments, after the arguments named in `args` (`leaseMs`, bound by `luaHeader`); the Lua walks
 * the holds itself. `run` resolves to one flag per hold: 1 (renewed) or 0 (gone).
 */
export class BatchScript extends Script {
  constructor(name: string, args: Names, lua: string) {
    super(name, luaHeader([], args) + lua, false);
  }

  /** Runs the batch with `keys` and `args` as described above. */
  run(connection: Connection, keys: readonly string[], args: readonly string[]): Promise<number[]> {
    return this.send(connection, ['', '', String(keys.length), ...keys, ...args], flags);
  }
}

/** A batch reply: one 1/0 flag per hold. */
const flags = (reply: unknown): number[] => (reply as unknown[]).map(Number);

/** Reply parsers shared by scripts. */
export const replies = {
  /** An integer reply as a number. */
  integer: (reply: unknown): number => Number(reply),
  /** An integer reply as a number, nil as `null`. */
  integerOrNil: (reply: unknown): number | null => (reply === null ? null : Number(reply)),
  /** An integer reply 1 as true, anything else as false. */
  flag: (reply: unknown): boolean => Number(reply) === 1,
} as const;
