import { currentContext, type LockContext } from '../context.js';
import type { Core } from '../core.js';
import type { MetricKind } from '../observe/kinds.js';
import { IllegalMonitorStateError, LockAcquireTimeoutError, OwnerUnknownError, ReentryNeedsContextError } from '../errors.js';
import type { LockHandle } from '../lock/handle.js';
import { memberSteps as steps, requireLockUnit, tryLockTimes, type AcquireOptions, type RLock } from '../lock/lock.js';
import { checkOptions, leaseMillis, optionLease, optionWait, TIME_OPTION_KEYS, type TimeUnit } from '../time.js';
import { newestAcquisition, newestNote, noteRefusal, noteTaskHold } from '../task-holds.js';
import { checkMembers, contextsOf, groupHandle, groupName, type Holding } from './members.js';

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RMultiLock`. */
    multi_lock: true;
    /** `RRedLock`. */
    red_lock: true;
  }
}

/** What a group acquisition got: the members it holds and, for RRedLock, the end of validity (monotonic ms). */
/** Options of a multi-lock's or RRedLock's `acquire()`: `RLock.acquire`'s times and signal (no `identifier`: a group has one owner per member). */
export type GroupAcquireOptions = Omit<AcquireOptions, 'identifier' | 'acquiredExternally'>;

export interface Taken {
  readonly holding: Holding;
  readonly validUntil?: number | undefined;
}

/** Does nothing (settles a promise whatever its outcome). */
const ignore = (): void => {};

/** A contextless acquisition of a group object, not yet released: its owner on each member, the members it holds. */
interface GroupHold {
  readonly ctxs: readonly LockContext[];
  readonly held: readonly number[];
}

/**
 * The front end shared by `RMultiLock` and `RRedLock` (Redisson's `RedissonRedLock` extends
 * `RedissonMultiLock` the same way): the `lock` / `tryLock` / `acquire` / `unlock` forms over an
 * acquisition algorithm (`take`), and the handle. Ownership is each member's own: the caller's context,
 * resolved once per call; outside any context the group object is a mutex, as `RLock`'s contextless
 * acquisitions: each call is a new owner on every member (so concurrent calls on one group object exclude
 * each other), and `unlock()` releases the members held by the calling task's newest `lock()`/`tryLock()`
 * of the object, or refuses (see `unlock`); a task that holds the object and acquires it again without a
 * context is refused with `ReentryNeedsContextError`.
 */
export abstract class GroupLock {
  /** The member locks, in the order given. */
  readonly locks: readonly RLock[];
  /** The members' names, as `[a, b]` (used in errors and handles). */
  readonly name: string;
  /** Members that must be held for the group to be held: all for a multi-lock, a majority for RRedLock. */
  readonly quorum: number;
  /** This object's current contextless holder, if any (see the class description). */
  private holder: GroupHold | undefined;
  /** Its kind in metrics and events: `red_lock` for the groups of members from distinct clients (RRedLock), else `multi_lock`. */
  private readonly observedKind: MetricKind;

  protected constructor(
    protected readonly core: Core,
    locks: readonly unknown[],
    distinctClients: boolean,
    quorumOf: (count: number) => number,
  ) {
    this.locks = Object.freeze(checkMembers(locks, distinctClients));
    this.name = groupName(this.locks);
    this.quorum = quorumOf(this.locks.length);
    this.observedKind = distinctClients ? 'red_lock' : 'multi_lock';
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
    const lease = leaseTime === undefined ? undefined : leaseMillis(leaseTime, requireLockUnit(unit));
    await this.takeNoted(Infinity, lease);
  }

  /**
   * Tries to acquire the group (Redisson's `tryLock`): `tryLock()` makes one round; `tryLock(waitTime,
   * unit)` retries for up to `waitTime` with the watchdog; `tryLock(waitTime, leaseTime, unit)` with a
   * lease (`-1` = watchdog). A wait time <= 0 (such as `-1`) makes one round, as Redisson's `tryLock(-1, …)`. Resolves to true when held, false (holding no member) when the wait ran out.
   * Throws as `lock()`.
   */
  tryLock(): Promise<boolean>;
  tryLock(waitTime: number, unit: TimeUnit): Promise<boolean>;
  tryLock(waitTime: number, leaseTime: number, unit: TimeUnit): Promise<boolean>;
  async tryLock(waitTime?: number, leaseOrUnit?: number | TimeUnit, unit?: TimeUnit): Promise<boolean> {
    const [wait, lease] = tryLockTimes(waitTime, leaseOrUnit, unit);
    return (await this.takeNoted(wait, lease)) !== undefined;
  }

  /**
   * Acquires the group and returns a handle that releases it (`release()` or `await using`), from any
   * context. Its signal aborts with a `LockLostError` when the group is lost (see the class); its
   * `leaseTime` is the lease (RRedLock: the validity left) in ms, or undefined with the watchdog. Options
   * as in `RLock.acquire` (`waitMs`/`leaseMs`, or `waitTime`/`leaseTime` with `unit`); without a wait
   * time it waits as long as it takes. Throws `LockAcquireTimeoutError` when the wait ran out,
   * `signal.reason` when aborted, and the errors of `lock()`.
   */
  async acquire(options: GroupAcquireOptions = {}): Promise<LockHandle> {
    checkOptions(options, TIME_OPTION_KEYS);
    const wait = optionWait(options);
    const lease = optionLease(options);
    options.signal?.throwIfAborted();
    const ctxs = contextsOf(this.locks);
    this.refuseReentry(ctxs);
    const taken = await this.takeAs(ctxs, wait, lease, options.signal);
    if (!taken) throw new LockAcquireTimeoutError(this.name, wait);
    const hold = this.remember(ctxs, taken);
    return groupHandle({
      name: this.name,
      locks: this.locks,
      ctxs,
      holding: taken.holding,
      leaseMs: lease,
      quorum: this.quorum,
      validUntil: lease === undefined ? undefined : taken.validUntil,
      finish: (members) => {
        if (hold && this.holder === hold) this.holder = undefined;
        return this.finish(members);
      },
      lost: (survivors) => this.lost(survivors),
    });
  }

  /**
   * Releases the caller's hold on the members (Redisson's `unlock()`): inside a context, one hold of the
   * context on every member (`RLock.unlock()` of each); outside any context, as `RLock.unlock()`: the
   * members held by the calling task's newest `lock()`/`tryLock()` of this object (waiting for it while it
   * is in flight), and nothing else. Throws `IllegalMonitorStateError` when that acquisition holds nothing
   * (refused, released, or superseded: its lease ran out and another task took the group), and
   * `OwnerUnknownError` when the calling task made none (see `RLock.unlock`). See each class for how
   * failures of member releases are reported.
   */
  async unlock(): Promise<void> {
    if (currentContext()) {
      const ctxs = contextsOf(this.locks);
      await this.releaseAll(this.locks.map((lock, i) => steps.release(lock, ctxs[i])));
      return;
    }
    const note = newestNote(this);
    if (!note) throw new OwnerUnknownError(this.name, `${steps.clientId(this.locks[0])}:?`);
    if (!note.done) await note.call!.then(ignore, ignore);
    const hold = this.holder;
    if (hold?.ctxs[0] !== note.owner) throw new IllegalMonitorStateError(this.name, `${steps.clientId(this.locks[0])}:${note.owner.id}`);
    this.holder = undefined;
    await this.releaseAll(hold.held.map((i) => steps.release(this.locks[i], hold.ctxs[i])));
  }

  /**
   * For `isHeldByCurrentContext`: whether the caller's owner holds each member (`HGET` on each). Outside a
   * context, the owners of the calling task's newest `lock()`/`tryLock()` of this object while it is the
   * current holder (otherwise new owners, which hold nothing).
   */
  protected membersHeld(): Array<Promise<boolean>> {
    const note = currentContext() ? undefined : newestNote(this);
    const ctxs = note && this.holder?.ctxs[0] === note.owner ? this.holder.ctxs : contextsOf(this.locks);
    return this.locks.map((lock, i) => steps.held(lock, ctxs[i]));
  }

  /** Waits for member releases and reports their failures (see each class). */
  protected abstract releaseAll(releases: Array<Promise<void>>): Promise<void>;

  /**
   * `lock()` / `tryLock()`: takes the group for the caller and records a contextless grant as the current
   * holder; outside a context the call is noted in the calling task first (see task-holds.ts), before any
   * await, and refused when the task's own earlier acquisition still holds the group or is in flight.
   */
  private takeNoted(waitMs: number, leaseMs: number | undefined): Promise<Taken | undefined> {
    const ctxs = contextsOf(this.locks);
    try {
      this.refuseReentry(ctxs);
    } catch (error) {
      return Promise.reject(error);
    }
    const note = ctxs[0].detached ? noteTaskHold(this, ctxs[0]) : undefined;
    const call = this.takeAs(ctxs, waitMs, leaseMs, undefined)
      .then((taken) => {
        this.remember(ctxs, taken);
        return taken;
      })
      .finally(() => note && (note.done = true));
    if (note) note.call = call;
    return call;
  }

  /** Outside a context, throws `ReentryNeedsContextError` when the caller's own earlier acquisition of this object holds it (see `acquireForCaller` (lock/protocol/caller.ts)). */
  private refuseReentry(ctxs: readonly LockContext[]): void {
    if (!ctxs[0].detached) return;
    const earlier = newestAcquisition(this);
    if (earlier?.done && this.holder?.ctxs[0] === earlier.owner) {
      // Noted, so that this task's unlock() never releases a sibling's hold (see acquireForCaller in lock/protocol/caller.ts).
      noteRefusal(this, ctxs[0]);
      throw new ReentryNeedsContextError(this.name);
    }
  }

  /**
   * Records a contextless acquisition as this object's current holder. A grant to new owners means the
   * previous contextless holder no longer held the group (its holds expired or were lost): members it
   * still held (a RRedLock minority) are released in the background. Returns the record.
   */
  private remember(ctxs: readonly LockContext[], taken: Taken | undefined): GroupHold | undefined {
    if (!taken || !ctxs[0].detached) return undefined;
    const previous = this.holder;
    this.holder = { ctxs, held: taken.holding.held };
    if (previous) {
      for (const i of previous.held) {
        steps.release(this.locks[i], previous.ctxs[i]).catch((err: unknown) => this.core.log.debug({ group: this.name, err }, 'member of a superseded group hold not released'));
      }
    }
    return this.holder;
  }

  /**
   * Runs `take` for the owners `ctxs`; afterwards every member the call does not hold gives up its owner
   * (`memberSteps.abandon`: a grant whose reply was lost is released in the background).
   */
  private async takeAs(ctxs: LockContext[], waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Taken | undefined> {
    let taken: Taken | undefined;
    try {
      taken = await this.core.observe.acquire(this.observedKind, this.name, '', undefined, waitMs, signal, () => this.take(ctxs, waitMs, leaseMs, signal));
      return taken;
    } finally {
      const held = new Set(taken?.holding.held);
      this.locks.forEach((lock, i) => {
        if (!held.has(i)) steps.abandon(lock, ctxs[i]);
      });
    }
  }

  /** The acquisition algorithm: resolves to what it holds, or undefined when the wait ran out. */
  protected abstract take(ctxs: LockContext[], waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Taken | undefined>;

  /** Releases the member handles of a handle being released. */
  protected abstract finish(members: LockHandle[]): Promise<void>;

  /**
   * A handle's group was lost (fewer than `quorum` members held) while `survivors` are still held: the
   * multi-lock leaves them to the caller's `release()` (nothing to do); RRedLock releases them.
   */
  protected lost(_survivors: LockHandle[]): void {}
}
