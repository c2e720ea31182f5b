import { CountedObject } from '../counted.js';
import type { Core } from '../core.js';
import { PermitAcquireTimeoutError } from '../errors.js';
import { waitFor, type Attempt } from '../pubsub/wait.js';
import { checkOptions, optionWait, waitMillis, type TimeUnit } from '../time.js';
import { acquireOutcome, permitCount, permitDelta, permitTotal, requireUnit, tookPermits, WAKE_BY_PERMITS } from './permits.js';
import { ACQUIRE, ADD, DRAIN, TRY_SET } from './scripts.js';

/**
 * Options of `RSemaphore.acquire()`. Give the wait time in milliseconds (`waitMs`) or with its unit
 * (`waitTime` and `unit`); `{ waitTime: 5 }` alone is refused.
 */
export interface SemaphoreAcquireOptions {
  /** Permits to take at once. Default 1. */
  permits?: number;
  /** How long to wait, in milliseconds: 0 for one attempt; omitted, Infinity or -1 to wait until enough permits are free. */
  waitMs?: number;
  /** `waitMs` in `unit` (required with it). Not together with `waitMs`. */
  waitTime?: number;
  /** Unit of `waitTime`; required with it, refused without it. */
  unit?: TimeUnit;
  /** Aborts the wait; the promise then rejects with `signal.reason`. */
  signal?: AbortSignal;
}

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
    super(core, name, 'permits', 'semaphore');
  }

  /**
   * Sets the number of permits if the semaphore does not exist yet (Redisson's `trySetPermits`; `GET`, `SET`).
   * Resolves to true when it was set, false when the semaphore already existed. Throws
   * `InvalidArgumentError` (not an integer >= 0), `WrongTypeError`, `RedisUnavailableError`,
   * `ClientClosedError`.
   */
  async trySetPermits(permits: number): Promise<boolean> {
    const count = permitTotal(permits);
    return Number(await this.run('semaphore.trySetPermits', TRY_SET, [String(count)])) === 1;
  }

  /**
   * Adds `permits` free permits, or removes them when negative (Redisson's `addPermits`; `INCRBY`), and
   * wakes waiters. The count may become negative; acquisitions then wait until enough are released.
   * Throws `InvalidArgumentError` (not an integer) and the errors of `trySetPermits`.
   */
  async addPermits(permits: number): Promise<void> {
    await this.run('semaphore.addPermits', ADD, [String(permitDelta(permits))]);
  }

  /**
   * Takes permits, waiting as long as it takes (Redisson's `acquire()` / `acquire(permits)`), or with
   * options: a wait time (then `PermitAcquireTimeoutError` when it runs out) and an abort signal (then
   * it rejects with `signal.reason`). Waiting is woken by release messages, with a timer of
   * `lockWatchdogTimeout` as fallback for lost messages. Throws `InvalidArgumentError`,
   * `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async acquire(permitsOrOptions: number | SemaphoreAcquireOptions = 1): Promise<void> {
    const options = typeof permitsOrOptions === 'number' ? { permits: permitsOrOptions } : checkOptions(permitsOrOptions);
    const permits = permitCount(options.permits ?? 1);
    const wait = optionWait(options);
    options.signal?.throwIfAborted();
    if (!(await this.take(permits, wait, options.signal))) throw new PermitAcquireTimeoutError(this.name, permits, wait);
  }

  /**
   * Tries to take permits (Redisson's `tryAcquire`): `tryAcquire()` and `tryAcquire(permits)` make
   * exactly one attempt; `tryAcquire(waitTime, unit)` and `tryAcquire(permits, waitTime, unit)` wait up to
   * `waitTime` (-1: no limit). Resolves to true when the permits were taken, false when too few were free
   * for the whole wait. Throws `InvalidArgumentError`, `WrongTypeError`, `RedisUnavailableError`,
   * `ClientClosedError`.
   */
  tryAcquire(permits?: number): Promise<boolean>;
  tryAcquire(waitTime: number, unit: TimeUnit): Promise<boolean>;
  tryAcquire(permits: number, waitTime: number, unit: TimeUnit): Promise<boolean>;
  async tryAcquire(first?: number, second?: number | TimeUnit, unit?: TimeUnit): Promise<boolean> {
    if (typeof second === 'string') return this.take(1, waitMillis(first, second), undefined);
    const permits = permitCount(first ?? 1);
    return this.take(permits, second === undefined ? 0 : waitMillis(second, requireUnit(unit)), undefined);
  }

  /**
   * Gives back `permits` (default 1) and wakes waiters (Redisson's `release`; `INCRBY` and a message with
   * the new count). Any caller may release, even permits it never took, and nothing caps the count. A
   * retry after a lost reply does not add them twice (request latch). Throws `InvalidArgumentError`,
   * `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async release(permits = 1): Promise<void> {
    const delta = String(permitCount(permits));
    await this.core.observe.release('semaphore', this.name, this.key, undefined, () => this.run('semaphore.release', ADD, [delta]));
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
    return Number(await this.run('semaphore.drainPermits', DRAIN, []));
  }

  /** One attempt at taking `permits`, or a wait of up to `waitMs` for them. */
  private async take(permits: number, waitMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    this.core.checkOpen();
    const taken = await waitFor({
      channels: this.core.channels,
      channel: this.channel,
      rule: WAKE_BY_PERMITS,
      need: permits,
      waitMs,
      subscriptionTimeoutMs: this.core.subscriptionTimeout,
      maxPollMs: this.core.watchdog.leaseMs,
      signal,
      attempt: (deadline) => this.attempt(permits, deadline, signal),
      observed: { observer: this.core.observe, kind: 'semaphore', name: this.name, key: this.key },
    });
    return taken === true;
  }

  private async attempt(permits: number, deadline: number | undefined, signal: AbortSignal | undefined): Promise<Attempt<true>> {
    const reply = await this.run('semaphore.acquire', ACQUIRE, [String(permits)], {
      deadline,
      signal,
      onLateResults: (replies) => {
        if (tookPermits(replies)) void this.undo(permits);
      },
    });
    return acquireOutcome(reply, true);
  }

  /** Gives back permits taken by an attempt that succeeded after its caller gave up. */
  private async undo(permits: number): Promise<void> {
    try {
      await this.run('semaphore.release', ADD, [String(permits)]);
    } catch (error) {
      this.core.log.warn({ semaphore: this.name, permits, err: error }, 'could not give back permits taken after the caller gave up');
    }
  }
}
