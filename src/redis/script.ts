import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Connection } from './connection.js';
import { deniedBy } from './failures.js';
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

/** Makes every `Script.run` on `connection` follow `mode`; `log` tells once when `auto` switches. */
export function useScripting(connection: Connection, mode: ScriptingMode, log: Logger): void {
  modes.set(connection, { functions: mode === 'functions', auto: mode === 'auto', log });
}

/**
 * A Lua script run with EVALSHA, falling back to EVAL when the server does not know it yet (after a
 * restart, a failover or `SCRIPT FLUSH`); EVAL also loads it for the next EVALSHA. Or, when the
 * connection's scripting mode says so, as a function of relock's Functions library. An ACL refusal
 * throws `PermissionError`.
 */
export class Script {
  readonly sha: string;
  /** The script only reads: a `no-writes` function, called with `FCALL_RO`. */
  readonly readOnly: boolean;
  constructor(
    /** A short name for logs and errors, such as `'lock.acquire'`. */
    readonly name: string,
    readonly source: string,
    options: { readOnly?: boolean } = {},
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
    this.readOnly = options.readOnly ?? false;
    register(this);
  }

  /** Runs the script with `keys` (all in one slot; the first routes it) and `args`. Replies are raw. */
  async run(connection: Connection, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const scripting = modes.get(connection);
    if (scripting?.functions) return callFunction(connection, this, keys, args);
    const command = ['EVALSHA', this.sha, String(keys.length), ...keys, ...args];
    try {
      try {
        return await connection.send(keys[0], command);
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        command[0] = 'EVAL';
        command[1] = this.source;
        return await connection.send(keys[0], command);
      }
    } catch (error) {
      const denied = deniedBy(error, command[0].toLowerCase());
      if (scripting?.auto && denied?.permission === 'command' && (denied.command === 'evalsha' || denied.command === 'eval')) {
        if (!scripting.functions) {
          scripting.functions = true;
          scripting.log.warn({ err: error }, `Redis refused ${denied.command.toUpperCase()} to this user (NOPERM): relock runs its scripts as Redis Functions (FCALL) from now on`);
        }
        return callFunction(connection, this, keys, args);
      }
      throw refusal(error, this.name, command[0]);
    }
  }
}
