import type { Core } from './core.js';
import { auxName, mainKey } from './keys.js';
import { runObjectScript, type ObjectRunOptions, type ObjectScript } from './redis/object-script.js';

/**
 * The base of the objects whose state is one integer in a Redis string at `keyPrefix + name` (a
 * semaphore's free permits, a latch's count), changed by `ObjectScript`s that publish on the object's
 * channel `relock:channel:{name}:<kind>`.
 */
export abstract class CountedObject {
  /** The Redis key holding the count (a string). */
  readonly key: string;
  /** The channel changes of the count are published on. */
  readonly channel: string;

  protected constructor(
    protected readonly core: Core,
    /** The name given to the factory (`getSemaphore`, `getCountDownLatch`). */
    readonly name: string,
    channelKind: string,
  ) {
    this.key = mainKey(core.keyPrefix, name);
    this.channel = auxName(core.keyPrefix, 'channel', this.key, channelKind);
  }

  /** The name given to the factory (Redisson's `getName()`). */
  getName(): string {
    return this.name;
  }

  /** The count as stored (`GET`), 0 when the key does not exist. */
  protected async readCount(operation: string, deadline?: number, signal?: AbortSignal): Promise<number> {
    this.core.checkOpen();
    const reply = await this.core.executor.run(operation, () => this.core.connection.send(this.key, ['GET', this.key]), {
      idempotent: true,
      deadline,
      signal,
      expects: { key: this.key, type: 'string' },
    });
    return Number(reply ?? 0);
  }

  /** Runs one of the object's scripts on its key and channel. */
  protected run(operation: string, script: ObjectScript, args: readonly string[], options: ObjectRunOptions = {}): Promise<unknown> {
    return runObjectScript(this.core, operation, script, [this.key], this.channel, args, { ...options, expects: { key: this.key, type: 'string' } });
  }
}
