/**
 * The unlock protocol of every hash lock: one `Unlock` per call. An unlock of an owner whose acquisition
 * is in flight waits for its outcome first (`unlock`); the watchdog stops renewing the hold at once; the
 * lock's unlock script runs as an executor request with a guard (`unlockGuard`) and an unlock latch, so a
 * retry after a lost reply replays the first answer; the answer is recorded in `unlocked`.
 * @internal Not exported from the package.
 */
import { allLanded, recordReleased, releasedRenewed, type LockContext } from '../../context.js';
import { IllegalMonitorStateError } from '../../errors.js';
import type { ObjectKind } from '../../kinds.js';
import type { Request } from '../../redis/executor.js';
import { monotonic } from '../../time.js';
import type { ReleasedHold } from '../../watchdog/hold.js';
import type { LockHooks } from './hooks.js';
import { unsettled } from './marks.js';

/**
 * A hold of one contextless acquisition of a lock object, not yet released: its owner, a detached context
 * of its own, which carries the hold's lease end and release mark (`LockContext.until`, `releasing`).
 */
export type Contextless = LockContext;

/**
 * One unlock call of a hash lock, and its executor request (see `Request`): `send` runs the unlock script
 * (a retry replays the first attempt's answer), `answered` records the release. One object per call.
 */
class Unlock implements Request<number | null, void> {
  readonly idempotent = true;
  /** Attempts sent (a retry replays the first attempt's answer, see `unlockSource`). */
  attempts = 0;

  constructor(
    readonly lock: LockHooks,
    readonly ctx: LockContext,
    readonly owner: string,
    /** Whether the hold released is one the watchdog renews. */
    readonly renewed: boolean,
    /** The watchdog's record of the last renewed hold, when this released it (see `Watchdog.release`). */
    readonly released: ReleasedHold | undefined,
    /** Monotonic ms the release began at. */
    readonly releasedAt: number,
    /** The releasing handle's signal, aborted when the hold is found lost. */
    readonly controller: AbortController | undefined,
    /** The call's unlock latch key. */
    readonly latch: string,
    /** The owner's hold count as this client knows it, or '' to latch every answer (see `unlockGuard`). */
    readonly guard: string,
    /** The contextless hold `unlock()` marked `releasing` for this call, unmarked when it ends. */
    readonly held: Contextless | undefined,
  ) {}

  /** What a WRONGTYPE reply is reported as (read by the executor only then). */
  get expects(): { key: string; kind: ObjectKind } {
    return this.lock.expects;
  }

  send(attempt: number): Promise<number | null> {
    return this.lock.runUnlock(this.owner, this.latch, (this.attempts = attempt), this.guard);
  }

  answered(reply: number | null): void {
    if (this.held) this.held.releasing = false;
    unlocked(this, reply);
  }

  failed(): void {
    if (this.held) this.held.releasing = false;
    // A failed call may have written its latch: it is deleted with the batch.
    this.lock.core.latches.release(this.latch);
  }
}

/**
 * Releases one hold of `ctx`'s owner: the innermost one, or one of the kind `renewed` (true: renewed by
 * the watchdog, false: with a lease) when a handle knows it. Only releasing a renewed hold takes one
 * count off the watchdog's, so releasing an inner leased hold never stops renewing an outer one.
 * An unlock issued while an acquisition attempt of the same owner is in flight first waits for that
 * attempt's outcome to be recorded (Redis runs the two in that order too), so that a grant it releases is
 * never renewed or reported lost afterwards. When Redis answers that the owner held nothing although the
 * watchdog was renewing its last hold (the unlock ran before the watchdog could notice the loss, as when
 * a blocked event loop resumes past the lease), the hold is reported lost (`lockLost`, and `controller`,
 * the releasing handle's signal, aborts) before `IllegalMonitorStateError` is thrown. `held`: the
 * contextless hold `unlock()` marked `releasing`, unmarked when the call ends. Measured by the observer
 * (`Observer.release`) unless it releases quietly. Never throws: failures reject.
 */
export function unlock(lock: LockHooks, ctx: LockContext, renewed?: boolean, controller?: AbortController, held?: Contextless): Promise<void> {
  const owner = lock.ownerOf(ctx);
  if (lock.core.observe.releasesQuietly) return afterFlights(lock, ctx, owner, renewed, controller, held);
  return measured(lock, ctx, owner, renewed, controller, held);
}

/** `unlock` measured by the observer (`Observer.release`); apart from `unlock` so that an unmeasured call makes no closure. */
function measured(lock: LockHooks, ctx: LockContext, owner: string, renewed: boolean | undefined, controller: AbortController | undefined, held: Contextless | undefined): Promise<void> {
  return lock.core.observe.release(lock.metricKind, lock.name, lock.key, owner, () => afterFlights(lock, ctx, owner, renewed, controller, held));
}

/** `unlock` for `owner` (`ctx`'s), once the owner's acquisition attempts in flight have landed. */
function afterFlights(lock: LockHooks, ctx: LockContext, owner: string, renewed: boolean | undefined, controller: AbortController | undefined, held: Contextless | undefined): Promise<void> {
  const inFlight = allLanded(ctx, lock.holdKey);
  if (inFlight) return afterLanding(inFlight, lock, ctx, owner, renewed, controller, held);
  return unlockNow(lock, ctx, owner, renewed, controller, held);
}

/** `unlockNow` once `inFlight` settles; apart from `afterFlights` so that an unlock with nothing in flight makes no closure. */
function afterLanding(inFlight: Promise<void>, lock: LockHooks, ctx: LockContext, owner: string, renewed: boolean | undefined, controller: AbortController | undefined, held: Contextless | undefined): Promise<void> {
  return inFlight.then(() => unlockNow(lock, ctx, owner, renewed, controller, held));
}

/** Releases one hold of `owner` now: the watchdog stops renewing it at once, then the unlock script runs (see `Unlock`). */
function unlockNow(lock: LockHooks, ctx: LockContext, owner: string, renewed: boolean | undefined, controller: AbortController | undefined, held: Contextless | undefined): Promise<void> {
  const { core } = lock;
  const kind = releasedRenewed(ctx, lock.holdKey, renewed);
  const releasedAt = monotonic();
  const released = kind ? core.watchdog.release(lock.key, owner) : undefined;
  try {
    core.checkOpen();
  } catch (error) {
    if (held) held.releasing = false;
    return Promise.reject(error);
  }
  const call = new Unlock(lock, ctx, owner, kind, released, releasedAt, controller, core.latches.next(lock.latchPrefix), unlockGuard(lock, ctx), held);
  return core.executor.request('lock.unlock', call);
}

/**
 * Records the answer of `call` (the executor's `answered`): nil when the owner held nothing (the hold is
 * forgotten, reported lost when the watchdog renewed it, and `IllegalMonitorStateError` thrown), else one
 * hold fewer. The latch is deleted unless the guard says the script wrote none.
 */
function unlocked(call: Unlock, answer: number | null): void {
  const { lock, ctx, owner, renewed, guard } = call;
  const { core } = lock;
  let reply = answer;
  // A guarded unlock wrote its latch only if it answered nil or 2/3, or was retried (see `unlockSource`).
  if (guard === '' || call.attempts > 1 || reply === null || Number(reply) >= 2) core.latches.release(call.latch);
  if (reply !== null && Number(reply) >= 2) reply = Number(reply) - 2;
  if (reply === null) {
    recordReleased(ctx, lock.holdKey, renewed, true);
    if (call.released) core.watchdog.reportLost(call.released, call.releasedAt, call.controller);
    throw new IllegalMonitorStateError(lock.name, owner);
  }
  const hold = recordReleased(ctx, lock.holdKey, renewed);
  if (core.debug && Number(reply) === 1) {
    core.log.debug({ lock: lock.name, owner, holdMs: hold ? Math.round(monotonic() - hold.since) : undefined }, 'lock released');
  }
}

/**
 * The guard of an unlock by `ctx` (see `unlockSource`): the owner's hold count as this client knows it,
 * or '' (latch every answer) when a grant whose reply was lost may be in Redis.
 */
function unlockGuard(lock: LockHooks, ctx: LockContext): string {
  return unsettled(ctx, lock.holdKey) ? '' : String(ctx.holds.get(lock.holdKey)?.count ?? 0);
}
