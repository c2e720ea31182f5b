import { pause, roundDelay } from '../backoff.js';
import type { LockContext } from '../context.js';
import type { Core } from '../core.js';
import { RedisUnavailableError } from '../errors.js';
import type { LockHandle } from '../lock/handle.js';
import { memberSteps as steps, type Grant } from '../lock/lock.js';
import { monotonic } from '../time.js';
import { GroupLock, type Taken } from './group-lock.js';
import { failures, releaseMembers, type Holding } from './members.js';

/** Delays after a collision (a round that had to give back members): full jitter, 2 ms doubling up to 100 ms. */
const COLLISION_BASE_MS = 2;
const COLLISION_CAP_MS = 100;

/**
 * The lease members are taken with while the set is being acquired, for a requested `leaseMs`:
 * `leaseMs + max(leaseMs, 100)`. Once every member is held, each is set to `leaseMs` (Redisson takes
 * them with twice the wait time, then `expire`s them to the lease).
 */
export function acquisitionLease(leaseMs: number): number {
  return leaseMs + Math.max(leaseMs, 100);
}

/** How one round ended: every member held, the wait ran out, or a member it could not get. */
type RoundResult =
  | { readonly holding: Holding }
  /** The wait for the blocking member ran out. */
  | { readonly timedOut: true }
  /** Member `failed` was busy (or unreachable: `error`); `collided` when members had to be given back. */
  | { readonly failed: number; readonly collided: boolean; readonly error: unknown };

/**
 * All-or-nothing over several locks (Redisson's `RedissonMultiLock`), possibly from different
 * `LockClient`s, that is different Redis servers: it holds every member or none of them.
 *
 * Acquisition never waits while holding part of the set. A round makes one attempt on each member in
 * order; when one is busy, the members taken in that round are released and the next round first waits
 * for the busy member alone (with that member's own waiting: pub/sub for an `RLock`, polling for a spin
 * lock), then makes one attempt on each of the others. A round that had to give members back is followed
 * by a random delay (full jitter, 2 ms doubling to 100 ms, within the wait time), so that two callers
 * taking overlapping sets in opposite order do not keep colliding (livelock); neither can deadlock, since
 * neither waits while holding.
 *
 * Leases: without a lease every member is held by its client's watchdog. With a lease, members are taken
 * with a longer lease while the set is being acquired (`acquisitionLease`) and each is set to the lease
 * once all are held (an owner-checked `PEXPIRE`), so that every member expires `lease` after the
 * acquisition completed. A member found no longer held at that point makes the round fail.
 *
 * Failures: a member whose reply was lost is released when the late reply shows it was granted (RLock's
 * late-result undo); if the connection dropped and no reply ever comes, it expires with its (acquisition)
 * lease or, without a lease, within its client's `lockWatchdogTimeout`. A member that could not be
 * reached (`RedisUnavailableError`) is treated as busy while wait time remains: the next round waits for it
 * with its own retry policy; the error is thrown when the wait ends. Other errors are thrown at once,
 * after releasing what the round held.
 *
 * Ownership is each member's own: the caller's context or, outside any context, a new owner per member
 * and call (as `RLock`'s contextless acquisitions: concurrent calls on one multi-lock object exclude each
 * other, and a contextless `unlock()` releases only the members held by the calling task's newest
 * acquisition, see `GroupLock`). Call `unlock()`
 * from the same context, or use the handle from `acquire()`. Keys and channels are the members' own; the
 * multi-lock stores nothing. Reentrant through its members inside a context.
 */
export class RMultiLock extends GroupLock {
  /** @internal Use `LockClient.getMultiLock(...locks)`. */
  constructor(core: Core, locks: readonly unknown[]) {
    super(core, locks, false, (count) => count);
  }

  /**
   * Releases one hold of the caller on every member, in parallel (Redisson's `unlock()`; outside any
   * context, the calling task's own hold of this object: see `GroupLock`), and waits for all. Throws the
   * first error after trying every member: `IllegalMonitorStateError` when a member was not held (never
   * acquired, or its lease expired), `RedisUnavailableError`, `ClientClosedError`.
   */
  override unlock(): Promise<void> {
    return super.unlock();
  }

  protected async releaseAll(releases: Array<Promise<void>>): Promise<void> {
    throwFirst(failures(await Promise.allSettled(releases)));
  }

  /** Whether the caller holds every member (`HGET` on each; outside a context, see `GroupLock.membersHeld`). Throws as `RLock.isHeldByCurrentContext`. */
  async isHeldByCurrentContext(): Promise<boolean> {
    const held = await Promise.all(this.membersHeld());
    return held.every(Boolean);
  }

  /** A handle's release releases every member and throws the first error, after trying all. */
  protected async finish(members: LockHandle[]): Promise<void> {
    throwFirst(failures(await Promise.allSettled(members.map((m) => m.release()))));
  }

  /** Rounds until every member is held, or the wait ran out (undefined). */
  protected async take(ctxs: LockContext[], waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Taken | undefined> {
    const started = monotonic();
    const deadline = Number.isFinite(waitMs) ? started + waitMs : undefined;
    const remaining = (): number => (deadline === undefined ? Infinity : Math.max(0, deadline - monotonic()));
    let blocker = -1;
    let rounds = 0;
    let collisions = 0;
    for (;;) {
      rounds++;
      const round = await this.round(ctxs, blocker, leaseMs, remaining, signal);
      if ('holding' in round) {
        if (this.core.debug) this.core.log.debug({ multiLock: this.name, rounds, collisions, waitMs: Math.round(monotonic() - started) }, 'multi-lock acquired');
        return round;
      }
      if ('timedOut' in round) return undefined;
      if (remaining() <= 0) {
        if (round.error !== undefined) throw round.error;
        return undefined;
      }
      blocker = round.failed;
      if (round.collided) await pause(Math.min(roundDelay(++collisions, COLLISION_BASE_MS, COLLISION_CAP_MS), remaining()), signal);
    }
  }

  /**
   * One round: wait for `blocker` (if any) holding nothing, then one attempt on each other member in
   * order, then the final lease. Releases what it took unless it got every member.
   */
  private async round(ctxs: LockContext[], blocker: number, leaseMs: number | undefined, remaining: () => number, signal: AbortSignal | undefined): Promise<RoundResult> {
    const { locks } = this;
    const phaseLease = leaseMs === undefined ? undefined : acquisitionLease(leaseMs);
    const grants: Array<Grant | undefined> = new Array<Grant | undefined>(locks.length);
    const held: number[] = [];
    let failed = -1;
    let error: unknown;
    signal?.throwIfAborted();
    try {
      if (blocker >= 0) {
        const grant = await steps.acquire(locks[blocker], ctxs[blocker], remaining(), phaseLease, signal);
        if (!grant) return { timedOut: true };
        grants[blocker] = grant;
        held.push(blocker);
      }
      for (let i = 0; i < locks.length && failed < 0; i++) {
        if (i === blocker) continue;
        try {
          grants[i] = await steps.acquire(locks[i], ctxs[i], 0, phaseLease, signal);
        } catch (e) {
          if (!(e instanceof RedisUnavailableError)) throw e;
          error = e;
        }
        if (grants[i]) held.push(i);
        else failed = i;
      }
      if (failed < 0 && leaseMs !== undefined) [failed, error] = await this.finalLease(ctxs, held, grants, leaseMs);
      signal?.throwIfAborted();
      if (failed < 0) return { holding: { held, grants } };
    } catch (e) {
      await this.giveBack(ctxs, held);
      throw e;
    }
    await this.giveBack(ctxs, held);
    return { failed, collided: held.length > 0, error };
  }

  /**
   * Sets every held member to the final lease (owner-checked `PEXPIRE`, in parallel); the grants then
   * count from those calls. Resolves to [-1] when all are set, or [index, error] of a member that is no
   * longer held or could not be reached.
   */
  private async finalLease(ctxs: LockContext[], held: number[], grants: Array<Grant | undefined>, leaseMs: number): Promise<[number, unknown]> {
    const results = await Promise.allSettled(held.map((i) => steps.setLease(this.locks[i], ctxs[i], leaseMs)));
    for (const [k, result] of results.entries()) {
      const i = held[k];
      if (result.status === 'fulfilled' && result.value !== undefined) {
        grants[i] = { sentAt: result.value, token: grants[i]!.token };
        continue;
      }
      if (result.status === 'fulfilled') return [i, undefined];
      if (!(result.reason instanceof RedisUnavailableError)) throw result.reason;
      return [i, result.reason];
    }
    return [-1, undefined];
  }

  /** Releases the members a failed round took; a release that fails leaves the member to its lease. */
  private async giveBack(ctxs: LockContext[], held: number[]): Promise<void> {
    if (held.length === 0) return;
    const errors = await releaseMembers(this.locks, ctxs, held);
    for (const err of errors) this.core.log.warn({ multiLock: this.name, err }, 'could not release a member after a failed round; it expires with its lease');
  }
}

function throwFirst(errors: unknown[]): void {
  if (errors.length > 0) throw errors[0];
}
