import { PermitNotHeldError } from '../errors.js';
import type { TimeUnit } from '../time.js';

/** What a handle asks its semaphore to do. @internal */
export interface PermitHandleOps {
  /**
   * Releases the handle's permits, all or nothing (`PermitNotHeldError` when one is not held); with
   * `disposing`, the ones still held are released even when others are gone, and nothing is thrown for those.
   */
  release(disposing: boolean): Promise<void>;
  /** Resolves to the new lease in milliseconds. */
  updateLeaseTime(leaseTime: number, unit: TimeUnit | undefined): Promise<number>;
}

/**
 * Permits returned by `RPermitExpirableSemaphore.acquire()`: release them with `release()` or
 * `await using`. The handle knows its permit ids, so it releases them from anywhere.
 */
export class PermitHandle implements AsyncDisposable {
  private released: Promise<void> | undefined;

  /** @internal */
  constructor(
    /** The semaphore's name, as given to `getPermitExpirableSemaphore()`. */
    readonly name: string,
    /** The ids of the permits held, one per permit. */
    readonly ids: readonly string[],
    /**
     * Aborts (with a `LockLostError` as its reason) when a permit is lost: the watchdog found it gone or
     * could not renew it before its lease ended, or its explicit lease ran out. Pass it to the work done
     * under the permits so that the work stops when they are no longer held.
     */
    readonly signal: AbortSignal,
    private lease: number | undefined,
    private readonly ops: PermitHandleOps,
  ) {}

  /** The lease in milliseconds, or `undefined` while the watchdog renews the permits. */
  get leaseTime(): number | undefined {
    return this.lease;
  }

  /** The id of the first (usually only) permit. */
  get id(): string {
    return this.ids[0];
  }

  /**
   * Releases every permit of the handle at once (all or nothing). Calling it again returns the first
   * call's promise. Throws `PermitNotHeldError` when one of them was no longer held (its lease expired,
   * or it was released by id): then none was released by this call. Throws `RedisUnavailableError` when
   * Redis could not be reached.
   */
  release(): Promise<void> {
    this.released ??= this.ops.release(false);
    return this.released;
  }

  /**
   * Gives every permit of the handle a new lease of `leaseTime` in `unit` (required, as in Redisson's
   * `updateLeaseTime(id, leaseTime, unit)`) from now, in Redis server time, and moves the signal's lease
   * timer with it; the watchdog stops renewing them. Throws `InvalidArgumentError` (no unit, a bad time),
   * and `PermitNotHeldError` when one of them is no longer held (then none was changed).
   */
  async updateLeaseTime(leaseTime: number, unit: TimeUnit): Promise<void> {
    this.lease = await this.ops.updateLeaseTime(leaseTime, unit);
  }

  /**
   * `await using permits = await semaphore.acquire()` releases at the end of the block: every permit of
   * the handle still held. A permit that had already ended (its lease ran out, the watchdog lost it) is
   * not an error here: that was reported through `signal` (aborted with a `LockLostError`) and, for a
   * permit the watchdog renewed, the client's `lockLost` event; so the block's end does not throw
   * `PermitNotHeldError`, and an error thrown by the block itself reaches the caller as it is (not inside
   * a `SuppressedError`). Other failures (`RedisUnavailableError`, `ClientClosedError`) still throw. An
   * explicit `release()` throws `PermitNotHeldError` as before (and then releases none).
   */
  async [Symbol.asyncDispose](): Promise<void> {
    this.released ??= this.ops.release(true);
    try {
      await this.released;
    } catch (error) {
      if (!(error instanceof PermitNotHeldError)) throw error;
    }
  }
}
