import type { LockContext } from '../context.js';
import type { Core } from '../core.js';
import { LockAcquireTimeoutError } from '../errors.js';
import type { LockHandle } from '../lock/handle.js';
import { requireUnit, tryLockTimes, type AcquireOptions, type RLock } from '../lock/lock.js';
import { checkOptions, leaseMillis, optionLease, optionWait, type TimeUnit } from '../time.js';
import { checkMembers, contextsOf, groupHandle, groupName, type Holding } from './members.js';

/** What a group acquisition got: the members it holds and, for RedLock, the end of validity (monotonic ms). */
export interface Taken {
  readonly holding: Holding;
  readonly validUntil?: number | undefined;
}

/**
 * The front end shared by `MultiLock` and `RedLock` (Redisson's `RedissonRedLock` extends
 * `RedissonMultiLock` the same way): the `lock` / `tryLock` / `acquire` forms over an acquisition
 * algorithm (`take`), and the handle. Ownership is each member's own (the caller's context, or outside any
 * context each member object), resolved once per call.
 */
export abstract class GroupLock {
  /** The member locks, in the order given. */
  readonly locks: readonly RLock[];
  /** The members' names, as `[a, b]` (used in errors and handles). */
  readonly name: string;
  /** Members that must be held for the group to be held: all for a multi-lock, a majority for RedLock. */
  readonly quorum: number;

  protected constructor(
    protected readonly core: Core,
    locks: readonly unknown[],
    distinctClients: boolean,
    quorumOf: (count: number) => number,
  ) {
    this.locks = Object.freeze(checkMembers(locks, distinctClients));
    this.name = groupName(this.locks);
    this.quorum = quorumOf(this.locks.length);
  }

  /** The members' names as `[a, b]` (Redisson's `getName()`); read locally. */
  getName(): string {
    return this.name;
  }

  /**
   * Acquires the group, waiting as long as it takes (Redisson's `lock()` / `lock(leaseTime, unit)`).
   * Without `leaseTime` each member is kept by its client's watchdog; with it, the members expire after
   * `leaseTime`. Throws `InvalidArgumentError` (bad time or unit), `WrongTypeError`,
   * `RedisUnavailableError`, `ClientClosedError` (see the class for when).
   */
  async lock(leaseTime?: number, unit?: TimeUnit): Promise<void> {
    const lease = leaseTime === undefined ? undefined : leaseMillis(leaseTime, requireUnit(unit));
    await this.take(contextsOf(this.locks), Infinity, lease, undefined);
  }

  /**
   * Tries to acquire the group (Redisson's `tryLock`): `tryLock()` makes one round; `tryLock(waitTime,
   * unit)` retries for up to `waitTime` with the watchdog; `tryLock(waitTime, leaseTime, unit)` with a
   * lease (`-1` = watchdog). Resolves to true when held, false (holding no member) when the wait ran out.
   * Throws as `lock()`.
   */
  tryLock(): Promise<boolean>;
  tryLock(waitTime: number, unit: TimeUnit): Promise<boolean>;
  tryLock(waitTime: number, leaseTime: number, unit: TimeUnit): Promise<boolean>;
  async tryLock(waitTime?: number, leaseOrUnit?: number | TimeUnit, unit?: TimeUnit): Promise<boolean> {
    const [wait, lease] = tryLockTimes(waitTime, leaseOrUnit, unit);
    return (await this.take(contextsOf(this.locks), wait, lease, undefined)) !== undefined;
  }

  /**
   * Acquires the group and returns a handle that releases it (`release()` or `await using`), from any
   * context. Its signal aborts with a `LockLostError` when the group is lost (see the class); its
   * `leaseTime` is the lease (RedLock: the validity left) in ms, or undefined with the watchdog. Options
   * as in `RLock.acquire` (`waitMs`/`leaseMs`, or `waitTime`/`leaseTime` with `unit`); without a wait
   * time it waits as long as it takes. Throws `LockAcquireTimeoutError` when the wait ran out,
   * `signal.reason` when aborted, and the errors of `lock()`.
   */
  async acquire(options: AcquireOptions = {}): Promise<LockHandle> {
    checkOptions(options);
    const wait = optionWait(options);
    const lease = optionLease(options);
    options.signal?.throwIfAborted();
    const ctxs = contextsOf(this.locks);
    const taken = await this.take(ctxs, wait, lease, options.signal);
    if (!taken) throw new LockAcquireTimeoutError(this.name, wait);
    return groupHandle({
      name: this.name,
      locks: this.locks,
      ctxs,
      holding: taken.holding,
      leaseMs: lease,
      quorum: this.quorum,
      validUntil: lease === undefined ? undefined : taken.validUntil,
      finish: (members) => this.finish(members),
    });
  }

  /** Releases the caller's hold on the members (see each class for how failures are reported). */
  abstract unlock(): Promise<void>;

  /** The acquisition algorithm: resolves to what it holds, or undefined when the wait ran out. */
  protected abstract take(ctxs: LockContext[], waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Taken | undefined>;

  /** Releases the member handles of a handle being released. */
  protected abstract finish(members: LockHandle[]): Promise<void>;
}
