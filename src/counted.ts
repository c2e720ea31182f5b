import type { Core } from './core.js';
import { auxName, mainKey } from './keys.js';
import { checkedRead, type ObjectKind } from './kinds.js';
import { ObjectKeys } from './object-keys.js';
import { runObjectScript, type ObjectRunOptions, type ObjectScript } from './redis/object-script.js';
import type { TimeUnit } from './time.js';

/**
 * The base of the objects whose state is one integer at `keyPrefix + name` (a semaphore's free permits in
 * a Redis string, a latch's count in a hash field), changed by `ObjectScript`s that publish on the
 * object's channel `relock:channel:{name}:<kind>`.
 */
export abstract class CountedObject {
  /** The Redis key holding the count (a semaphore's string, a latch's hash). */
  readonly key: string;
  /** The channel changes of the count are published on. */
  readonly channel: string;
  private readonly keys: ObjectKeys;

  protected constructor(
    protected readonly core: Core,
    /** The name given to the factory (`getSemaphore`, `getCountDownLatch`). */
    readonly name: string,
    channelKind: string,
    /** The kind of object (named in a `WrongTypeError`). */
    private readonly kind: ObjectKind,
    /** Published on the channel by `delete()` ('' for nothing): the latch's `0` opens it for its awaiters. */
    deletedMessage: string,
  ) {
    this.key = mainKey(core.keyPrefix, name);
    this.channel = auxName(core.keyPrefix, 'channel', this.key, channelKind);
    this.keys = new ObjectKeys(core, kind, this.key, [], this.channel, deletedMessage);
  }

  /**
   * Whether the object exists in Redis (Redisson's `isExists`; `EXISTS` of its key): a semaphore once its
   * permits were set, a latch while its count is above zero. Throws `RedisUnavailableError`, `ClientClosedError`.
   */
  isExists(): Promise<boolean> {
    return this.keys.isExists();
  }

  /**
   * Deletes the object (Redisson's `delete`; `DEL` of its key in a script that first checks the kind):
   * a semaphore then has no permits (acquirers wait until they are set again), a latch is open, and its
   * awaiters are woken (`0` published on its channel). Resolves to true when the key existed. Throws
   * `WrongTypeError` (another kind holds the name; nothing deleted), `RedisUnavailableError`, `ClientClosedError`.
   */
  delete(): Promise<boolean> {
    return this.keys.delete();
  }

  /**
   * Sets the object's time to live (Redisson's `expire`; `PEXPIRE` of its key in a kind-checked script):
   * the key is deleted `time` `unit` from now, as by `delete()` but with no message (a latch's awaiters
   * see it open at their next check, within `lockWatchdogTimeout`). Resolves to
   * true when the key existed. Throws `InvalidArgumentError` (not a positive time, no unit), `WrongTypeError`,
   * `RedisUnavailableError`, `ClientClosedError`.
   */
  expire(time: number, unit: TimeUnit): Promise<boolean> {
    return this.keys.expire(time, unit);
  }

  /** The name given to the factory (Redisson's `getName()`). */
  getName(): string {
    return this.name;
  }

  /** The count as stored, 0 when the key does not exist (one `sendCountRead`, with retries). */
  protected async readCount(operation: string, deadline?: number, signal?: AbortSignal): Promise<number> {
    this.core.checkOpen();
    const reply = await this.core.executor.run(operation, () => this.sendCountRead(), {
      idempotent: true,
      deadline,
      signal,
      expects: { key: this.key, kind: this.kind },
    });
    return Number(reply ?? 0);
  }

  /** One read of the count: `GET` (a semaphore's string), kind-checked (`checkedRead`); the latch overrides it. */
  protected sendCountRead(): Promise<unknown> {
    return checkedRead(this.core.connection, { key: this.key, kind: this.kind }, ['GET', this.key]);
  }

  /** Runs one of the object's scripts with `values` (its key among them) on the object's channel. */
  protected run<V, R>(operation: string, script: ObjectScript<V, R>, values: V, options: ObjectRunOptions<R> = {}): Promise<R> {
    return runObjectScript(this.core, operation, script, values, this.channel, { ...options, expects: { key: this.key, kind: this.kind } });
  }
}
