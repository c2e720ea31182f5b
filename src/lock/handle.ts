import { IllegalMonitorStateError, InvalidArgumentError, LockLostError } from '../errors.js';
import { leaseMillis, type TimeUnit } from '../time.js';

/**
 * A held lock returned by `acquire()`: release it with `release()` or `await using`. The handle remembers
 * its owner, so it releases the right hold from any context.
 */
export class LockHandle implements AsyncDisposable {
  private released: Promise<void> | undefined;

  /** @internal */
  constructor(
    /** The lock's name, as given to `getLock()`. */
    readonly name: string,
    /** The owner id (`clientId:contextId`) that holds the lock. */
    readonly owner: string,
    /**
     * Aborts (with a `LockLostError` as its reason) when the lock is lost: the watchdog found it gone or
     * could not renew it before its lease ended, or an explicit lease ran out. Pass it to the work done
     * under the lock so that the work stops when the lock is no longer held.
     */
    readonly signal: AbortSignal,
    private lease: number | undefined,
    /** The fencing token of this acquisition (fenced locks only). */
    readonly token: bigint | undefined,
    private readonly doRelease: () => Promise<void>,
    /** Sets a new lease (ms) on the held lock; resolves false when Redis no longer has the hold. Absent: not supported. */
    private readonly doExtend?: (leaseMs: number) => Promise<boolean>,
    private readonly doStopRefresh?: () => void,
  ) {}

  /**
   * Stops the watchdog renewing this hold, without releasing it (redis-semaphore's `stopRefresh()`): the
   * lock then expires within `lockWatchdogTimeout` unless another process took it over (`acquire({
   * identifier, acquiredExternally: true })`) and renews it. The signal no longer reports a loss; `release()`
   * still releases the hold if it is there. Nothing happens for a handle with a lease (nothing renews it)
   * or when called again. Local only: no Redis call.
   */
  stopRefresh(): void {
    this.doStopRefresh?.();
  }

  /** The lease in milliseconds (the latest `extend()`'s once extended), or `undefined` when the watchdog renews the lock. */
  get leaseTime(): number | undefined {
    return this.lease;
  }

  /**
   * Gives the held lock a new lease of `leaseTime` `unit` from now (node-redlock's `lock.extend(duration)`,
   * Redisson's `expire` on a held lock): the lock's TTL is set to it (`PEXPIRE`, if this owner still holds
   * it: it may shorten the lease as well as lengthen it), and the handle's `signal` and `leaseTime` follow
   * the new lease. Fractions of a millisecond are rounded up to a whole millisecond (less than 1 ms in all is refused). Only for a handle
   * with a lease of an `RLock`, fenced, spin or fair lock; the watchdog already renews a handle without one.
   * Throws `LockLostError` (nothing sent when the handle's signal had already aborted or it was released;
   * reason `'expired'` when Redis no longer had the hold), `InvalidArgumentError` (a time that is not
   * positive or under 1 ms, no unit, a watchdog handle, a read-write, multi-lock or RRedLock handle), `RedisUnavailableError`,
   * `ClientClosedError`.
   */
  async extend(leaseTime: number, unit: TimeUnit): Promise<void> {
    if (this.doExtend === undefined || this.leaseTime === undefined) {
      throw new InvalidArgumentError('extend', this.leaseTime === undefined ? 'the watchdog renews this lock; extend() applies to a handle acquired with a lease' : 'extend() is not supported on this kind of handle');
    }
    const ms = leaseTime === -1 || unit === undefined ? undefined : leaseMillis(leaseTime, unit, 'leaseTime');
    if (ms === undefined) throw new InvalidArgumentError('leaseTime', 'extend(leaseTime, unit) needs a positive time and its unit, e.g. extend(5, "seconds")');
    if (this.signal.aborted) throw new LockLostError(this.name, (this.signal.reason as LockLostError | undefined)?.reason ?? 'lease-ended', { cause: this.signal.reason });
    if (this.released) throw new LockLostError(this.name, 'expired', { cause: new Error('the handle was released') });
    if (!(await this.doExtend(ms))) throw new LockLostError(this.name, 'expired');
    this.lease = ms;
  }

  /**
   * Releases this hold (one unlock of its owner). Calling it again returns the first call's promise.
   * Throws `IllegalMonitorStateError` when the lock was no longer held by this owner (its lease expired
   * or it was force-unlocked), and `RedisUnavailableError` when Redis could not be reached.
   */
  release(): Promise<void> {
    this.released ??= this.doRelease();
    return this.released;
  }

  /**
   * `await using handle = await lock.acquire()` releases at the end of the block. A hold that had
   * already ended (its lease ran out, the watchdog lost it, it was force-unlocked) is not an error here:
   * that was reported through `signal` (aborted with a `LockLostError`) and, for a hold the watchdog
   * renewed, the client's `lockLost` event; so the block's end does not throw `IllegalMonitorStateError`,
   * and an error thrown by the block itself reaches the caller as it is (not inside a `SuppressedError`).
   * Other failures of the release (`RedisUnavailableError`, `ClientClosedError`) still throw. An explicit
   * `release()` throws `IllegalMonitorStateError` as before.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.release();
    } catch (error) {
      if (!(error instanceof IllegalMonitorStateError)) throw error;
    }
  }
}
