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
    /** The lease in milliseconds, or `undefined` when the watchdog renews the lock. */
    readonly leaseTime: number | undefined,
    /** The fencing token of this acquisition (fenced locks only). */
    readonly token: bigint | undefined,
    private readonly doRelease: () => Promise<void>,
  ) {}

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
   * `await using handle = await lock.acquire()` releases at the end of the block. Throws as `release()`:
   * when the lock was lost meanwhile the block ends with `IllegalMonitorStateError` (wrapped with the
   * block's own error in a `SuppressedError` when the block threw too).
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}
