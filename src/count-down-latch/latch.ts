import { CountedObject } from '../counted.js';
import type { Core } from '../core.js';
import { InvalidArgumentError } from '../errors.js';
import { RECONNECTED, type WakeRule } from '../pubsub/channel.js';
import { clientWait, type Attempt } from '../pubsub/wait.js';
import { optionKeys } from '../option-keys.js';
import { checkOptions, optionWait, requireUnit, waitMillis, type TimeUnit } from '../time.js';
import { COUNT_DOWN, READ_COUNT, TRY_SET_COUNT } from './scripts.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RCountDownLatch`. */
    'count-down-latch': true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RCountDownLatch`. */
    count_down_latch: true;
  }
}

/**
 * Options of `RCountDownLatch.await()`. Give the wait time in milliseconds (`waitMs`) or with its unit
 * (`waitTime` and `unit`); `{ waitTime: 5 }` alone is refused.
 */
export interface LatchAwaitOptions {
  /** How long to wait, in milliseconds: 0 to only check; omitted or Infinity for no limit. */
  waitMs?: number;
  /** `waitMs` in `unit` (required with it). Not together with `waitMs`. */
  waitTime?: number;
  /** Unit of `waitTime`; required with it, refused without it. */
  unit?: TimeUnit;
  /** Aborts the wait; the promise then rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** The keys of `LatchAwaitOptions` (any other key is refused: `refuseUnknownKeys`). */
const AWAIT_KEYS = optionKeys<LatchAwaitOptions>({ waitMs: true, waitTime: true, unit: true, signal: true });

/** The message `0` (the count reached zero) wakes every local awaiter; nothing else wakes anyone. */
const WAKE_ALL_AT_ZERO: WakeRule = (message) => (message === '0' || message === RECONNECTED ? Infinity : 0);

/**
 * A count-down latch with Redisson's `RCountDownLatch` semantics: set a count once, count it down from
 * anywhere, and every awaiter in every process is released when it reaches zero. A latch is single-use:
 * at zero its key is deleted, and `trySetCount` may start a new round.
 *
 * Redis keys: a hash at `keyPrefix + name` with the count in `count` and `kind` = `count-down-latch`
 * (missing = 0 = open; a name serves one kind of object at a time, see `ObjectKind`), transient request
 * latches `relock:unlock:{name}:<requestId>`; channel `relock:channel:{name}:latch`, where `0` is
 * published when the count reaches zero (sharded pub/sub on a cluster). All share the name's hash tag.
 * Create latch objects with `LockClient.getCountDownLatch(name)`.
 */
export class RCountDownLatch extends CountedObject {
  /** @internal Use `LockClient.getCountDownLatch(name)`. */
  constructor(core: Core, name: string) {
    super(core, name, 'latch', 'count-down-latch', '0');
  }

  /** Reads the count with a script that checks the key's kind (`HMGET` of `kind` and `count`). */
  protected override sendCountRead(): Promise<unknown> {
    return READ_COUNT.run(this.core.connection, { countdown: this.key });
  }

  /**
   * Sets the count if the latch is open (its key does not exist) (Redisson's `trySetCount`).
   * Resolves to true when set, false when a count is already running. Throws `InvalidArgumentError`
   * (not an integer >= 1), `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async trySetCount(count: number): Promise<boolean> {
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1) {
      throw new InvalidArgumentError('count', `must be a whole number >= 1; got ${typeof count === 'number' ? count : typeof count}`);
    }
    return this.run('latch.trySetCount', TRY_SET_COUNT, { countdown: this.key, initial: String(count) });
  }

  /**
   * Counts down by one (Redisson's `countDown`; `HINCRBY … -1`); at zero deletes the key and releases every
   * awaiter. Resolves to the new count (0 also when the latch was already open, which is left as is).
   * Exactly once per call: a retry after a lost reply replays the first answer instead of counting down
   * again (request latch). Throws `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async countDown(): Promise<number> {
    return this.run('latch.countDown', COUNT_DOWN, { countdown: this.key });
  }

  /** The current count (`HMGET`; 0 when the latch is open). Throws `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`. */
  async getCount(): Promise<number> {
    return Math.max(0, await this.readCount('latch.getCount'));
  }

  /**
   * Waits until the count reaches zero (Redisson's `await`): `await()` waits without limit;
   * `await(waitTime, unit)` waits up to `waitTime` (<= 0: checks once, as in Redisson) and resolves to true when the latch opened, false
   * when the time ran out; `await(options)` adds an abort signal (then it rejects with
   * `signal.reason`). Woken by the zero message, with a timer of `lockWatchdogTimeout` as fallback.
   * Throws `InvalidArgumentError`, `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  await(): Promise<void>;
  await(waitTime: number, unit: TimeUnit): Promise<boolean>;
  await(options: LatchAwaitOptions): Promise<boolean>;
  async await(waitOrOptions?: number | LatchAwaitOptions, unit?: TimeUnit): Promise<boolean | void> {
    const options: LatchAwaitOptions = typeof waitOrOptions === 'object' ? checkOptions(waitOrOptions, AWAIT_KEYS) : { waitTime: waitOrOptions, unit };
    if (typeof waitOrOptions === 'number') requireUnit(unit, 'await(5, "seconds")');
    const wait = typeof waitOrOptions === 'number' ? waitMillis(waitOrOptions, unit) : optionWait(options);
    options.signal?.throwIfAborted();
    this.core.checkOpen();
    const opened = await clientWait(this.core, {
      channel: this.channel,
      rule: WAKE_ALL_AT_ZERO,
      waitMs: wait,
      signal: options.signal,
      attempt: async (deadline): Promise<Attempt<true>> =>
        (await this.readCount('latch.await', deadline, options.signal)) > 0 ? { acquired: false, retryAfterMs: -1 } : { acquired: true, value: true },
      observed: { observer: this.core.observe, kind: 'count_down_latch', name: this.name, key: this.key },
    });
    if (waitOrOptions !== undefined) return opened === true;
  }
}
