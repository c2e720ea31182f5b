import { createHash } from 'node:crypto';
import type { Connection } from './connection.js';

/**
 * A Lua script run with EVALSHA, falling back to EVAL when the server does not know it yet (after a
 * restart, a failover or `SCRIPT FLUSH`); EVAL also loads it for the next EVALSHA.
 */
export class Script {
  readonly sha: string;
  constructor(
    /** A short name for logs and errors, such as `'lock.acquire'`. */
    readonly name: string,
    readonly source: string,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** Runs the script with `keys` (all in one slot; the first routes it) and `args`. Replies are raw. */
  async run(connection: Connection, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const command = ['EVALSHA', this.sha, String(keys.length), ...keys, ...args];
    try {
      return await connection.send(keys[0], command);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      command[0] = 'EVAL';
      command[1] = this.source;
      return connection.send(keys[0], command);
    }
  }
}
