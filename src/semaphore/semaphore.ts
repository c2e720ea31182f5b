import { CountedObject } from '../counted.js';
import type { Core } from '../core.js';
import { PermitAcquireTimeoutError } from '../errors.js';
import { clientWait, type Attempt } from '../pubsub/wait.js';
import { optionKeys } from '../option-keys.js';
import { checkOptions, optionWait, refuseOptionsObject, refuseStringTime, waitMillis, type TimeUnit } from '../time.js';
import { acquireOutcome, permitDelta, permitTotal, positiveTime, requirePermitUnit, tookPermits, WAKE_BY_PERMITS } from './permits.js';
import { warnIfUnset } from './unset.js';
import { ACQUIRE, ADD, ADD_IF_EXISTS, DRAIN, TRY_SET } from './scripts.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RSemaphore`. */
    semaphore: true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RSemaphore`. */
    semaphore: true;
  }
}

/**
 * Options of `RSemaphore.acquire()`. Give the wait time in milliseconds (`waitMs`) or with its unit
 * (`waitTime` and `unit`); `{ waitTime: 5 }` alone is refused.
 */
export interface SemaphoreAcquireOptions {
  /** Permits to take at once. Default 1. */
  permits?: number;
  /** How long to wait, in milliseconds: 0 for one attempt; omitted or `Infinity` to wait until enough permits are free; negative values are refused. */
  waitMs?: number;
  /** `waitMs` in `unit` (required with it). Not together with `waitMs`. */
  waitTime?: number;
  /** Unit of `waitTime`; required with it, refused without it. */
  unit?: TimeUnit;
  /** Aborts the wait; the promise then rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** The keys of `SemaphoreAcquireOptions` (any other key is refused: `refuseUnknownKeys`). */
const ACQUIRE_KEYS = optionKeys<SemaphoreAcquireOptions>({ permits: true, waitMs: true, waitTime: true, unit: true, signal: true });

/**
 * A counting semaphore with Redisson's `RSemaphore` semantics: a number of free permits that any
 * process takes and gives back. Permits belong to nobody: `release()` adds permits whoever calls it,
 * without an upper bound (as in `java.util.concurrent.Semaphore`), and a holder that crashes never gives
 * its permits back. For "at most N at once" with crash safety use `RPermitExpirableSemaphore`.
 *
 * Redis keys: a string at `keyPrefix + name` holding the number of free permits (missing = 0: nothing
 * can be acquired until `trySetPermits` or `addPermits`), transient request latches
 * `relock:unlock:{name}:<requestId>`; channel `relock:channel:{name}:permits`, where every change
 * publishes the new free count (sharded pub/sub on a cluster). All share the name's hash tag.
 *
 * Waiting: a waiter for k permits is woken when a message announces at least k free permits; waiters of
 * one process are served in arrival order, so a waiter for several permits collects them instead of
 * being overtaken by later one-permit waiters of the same process (across processes it is not fair).
 * Create semaphore objects with `LockClient.getSemaphore(name)`.
 */
export class RSemaphore extends CountedObject {
  /** @internal Use `LockClient.getSemaphore(name)`. */
  constructor(core: Core, name: string) {
    super(core, name, 'permits', 'semaphore', '');
  }

  /**
   * Sets the number of permits if the semaphore does not exist yet (Redisson's `trySetPermits`; `GET`, `SET`),
   * and with `timeToLive` and `unit` (Redisson's `trySetPermits(permits, Duration)`) gives the new key that
   * time to live (`PEXPIRE`): the semaphore is then deleted after it, whatever its count. Resolves to true
   * when it was set, false when the semaphore already existed (its TTL left as it was). Throws
   * `InvalidArgumentError` (permits not an integer >= 0, a time to live that is not positive or has no
   * unit), `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async trySetPermits(permits: number, timeToLive?: number, unit?: TimeUnit): Promise<boolean> {
    const count = permitTotal(permits);
    const ttl = timeToLive === undefined ? '' : String(positiveTime(timeToLive, unit, 'timeToLive'));
    return this.run('semaphore.trySetPermits', TRY_SET, { semaphore: this.key, permits: String(count), ttlMs: ttl });
  }

  /**
   * Gives back `permits` only if the semaphore exists (Redisson's `releaseIfExists`; `GET`, `INCRBY`), and
   * wakes waiters: a deleted or expired semaphore is not brought back by a late release. Resolves to true
   * when they were added, false when the semaphore did not exist. `releaseIfExists(0)` resolves true when
   * it exists, changing nothing. Retries after a lost reply do not add them twice (request latch). Throws
   * `InvalidArgumentError` (not a whole number >= 0), `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async releaseIfExists(permits = 1): Promise<boolean> {
    return this.run('semaphore.releaseIfExists', ADD_IF_EXISTS, { semaphore: this.key, permits: String(permitTotal(permits)) });
  }

  /**
   * Adds `permits` free permits, or removes them when negative (Redisson's `addPermits`; `INCRBY`), and
   * wakes waiters. The count may become negative; acquisitions then wait until enough are released.
   * Throws `InvalidArgumentError` (not an integer) and the errors of `trySetPermits`.
   */
  async addPermits(permits: number): Promise<void> {
    await this.run('semaphore.addPermits', ADD, { semaphore: this.key, permits: String(permitDelta(permits)) });
  }

  /**
   * Takes permits, waiting as long as it takes (Redisson's `acquire()` / `acquire(permits)`), or with
   * options: a wait time (then `PermitAcquireTimeoutError` when it runs out) and an abort signal (then
   * it rejects with `signal.reason`). `acquire(0)` resolves at once without a Redis call, as Redisson's
   * and Java's `Semaphore.acquire(0)`. Waiting is woken by release messages, with a timer of
   * `lockWatchdogTimeout` as fallback for lost messages. While the permits were never set (the key does
   * not exist) it waits, as Redisson's, until some process sets them, and logs a warning once per name
   * through the client's logger (see src/semaphore/unset.ts for why this is not an error). Throws `InvalidArgumentError`,
   * `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async acquire(permitsOrOptions: number | SemaphoreAcquireOptions = 1): Promise<void> {
    const options = typeof permitsOrOptions === 'number' ? { permits: permitsOrOptions } : checkOptions(permitsOrOptions, ACQUIRE_KEYS);
    const permits = permitTotal(options.permits ?? 1);
    const wait = optionWait(options);
    options.signal?.throwIfAborted();
    if (permits === 0) return;
    if (!(await this.take(permits, wait, options.signal))) throw new PermitAcquireTimeoutError(this.name, permits, wait);
  }

  /**
   * Tries to take permits (Redisson's `tryAcquire`): `tryAcquire()` and `tryAcquire(permits)` make
   * exactly one attempt; `tryAcquire(waitTime, unit)` and `tryAcquire(permits, waitTime, unit)` wait up to
   * `waitTime` (<= 0, such as -1: one attempt, as in Redisson). Resolves to true when the permits were taken, false when too few were free
   * for the whole wait. `tryAcquire(0, …)` resolves true without a Redis call (Redisson's and Java's no-op).
   * Throws `InvalidArgumentError` (permits not a whole number >= 0), `WrongTypeError`, `RedisUnavailableError`,
   * `ClientClosedError`.
   */
  tryAcquire(permits?: number): Promise<boolean>;
  tryAcquire(waitTime: number, unit: TimeUnit): Promise<boolean>;
  tryAcquire(permits: number, waitTime: number, unit: TimeUnit): Promise<boolean>;
  async tryAcquire(first?: number, second?: number | TimeUnit, unit?: TimeUnit): Promise<boolean> {
    refuseOptionsObject(first, 'permits', 'tryAcquire(1, 5, "seconds")', 'acquire(options)');
    if (unit !== undefined) refuseStringTime(second, 'waitTime', 'tryAcquire(2, 5, "seconds")');
    if (typeof second === 'string') return this.take(1, waitMillis(first, second), undefined);
    const permits = permitTotal(first ?? 1);
    const wait = second === undefined ? 0 : waitMillis(second, requirePermitUnit(unit));
    return permits === 0 || this.take(permits, wait, undefined);
  }

  /**
   * Gives back `permits` (default 1) and wakes waiters (Redisson's `release`; `INCRBY` and a message with
   * the new count). Any caller may release, even permits it never took, and nothing caps the count. A
   * retry after a lost reply does not add them twice (request latch). `release(0)` does nothing (no Redis
   * call), as in Redisson and Java. Throws `InvalidArgumentError` (not a whole number >= 0),
   * `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async release(permits = 1): Promise<void> {
    if (permitTotal(permits) === 0) return;
    const delta = String(permits);
    await this.core.observe.release('semaphore', this.name, this.key, undefined, () => this.run('semaphore.release', ADD, { semaphore: this.key, permits: delta }));
  }

  /**
   * The number of free permits (`GET`; 0 when the semaphore does not exist, negative after `addPermits(-n)`).
   * Throws `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  availablePermits(): Promise<number> {
    return this.readCount('semaphore.availablePermits');
  }

  /**
   * Takes every free permit and returns how many that was (Redisson's `drainPermits`): the count becomes 0.
   * Exactly once per call, across retries (request latch). Throws `WrongTypeError`,
   * `RedisUnavailableError`, `ClientClosedError`.
   */
  async drainPermits(): Promise<number> {
    return this.run('semaphore.drainPermits', DRAIN, { semaphore: this.key });
  }

  /** One attempt at taking `permits`, or a wait of up to `waitMs` for them. */
  private async take(permits: number, waitMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    this.core.checkOpen();
    const taken = await clientWait(this.core, {
      channel: this.channel,
      rule: WAKE_BY_PERMITS,
      need: permits,
      waitMs,
      signal,
      attempt: (deadline) => this.attempt(permits, deadline, signal),
      observed: { observer: this.core.observe, kind: 'semaphore', name: this.name, key: this.key },
    });
    return taken === true;
  }

  private async attempt(permits: number, deadline: number | undefined, signal: AbortSignal | undefined): Promise<Attempt<true>> {
    const take = await this.run('semaphore.acquire', ACQUIRE, { semaphore: this.key, permits: String(permits) }, {
      deadline,
      signal,
      onLateResults: (replies) => {
        return tookPermits(replies) ? this.undo(permits) : undefined;
      },
    });
    warnIfUnset(this.core, 'semaphore', this.name, take);
    return acquireOutcome(take, true);
  }

  /** Gives back permits taken by an attempt that succeeded after its caller gave up. */
  private async undo(permits: number): Promise<void> {
    try {
      await this.run('semaphore.release', ADD, { semaphore: this.key, permits: String(permits) });
    } catch (error) {
      this.core.log.warn({ semaphore: this.name, permits, err: error }, 'could not give back permits taken after the caller gave up');
    }
  }
}
