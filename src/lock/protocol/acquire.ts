/**
 * The acquisition protocol of every hash lock: one `Acquisition` per call, from its first attempt to its
 * outcome. `acquire` starts a call; each attempt is an executor request (`attempt`, `send`), whose answer
 * (`answered`) grants, asks again after a hold that ended unknown to the client (`holdEnded`), or finds
 * the lock busy and goes on with the lock's wait (`LockHooks.waitAfter`); the call ends in `finish` or
 * `fail`. Ambiguous failures arm the guard against lost replies (marks.ts); late grants are undone (undo.ts).
 * @internal Not exported from the package.
 */
import { landed, recordAcquired, recordReleased, takeOff, type Hold, type LockContext, type Unsettled } from '../../context.js';
import type { ObjectKind } from '../../kinds.js';
import { QUIET_PROBE, type AcquireProbe } from '../../observe/observer.js';
import type { Channel } from '../../pubsub/channel.js';
import { waitDeadline, type Attempt } from '../../pubsub/wait.js';
import type { Request } from '../../redis/executor.js';
import type { TaskHold } from '../../task-holds.js';
import { monotonic } from '../../time.js';
import type { WatchdogHold } from '../../watchdog/hold.js';
import type { AcquireResult } from '../scripts.js';
import type { Grant, LockHooks, Refused, Taken, Waiter } from './hooks.js';
import { settle, unsettle, unsettled } from './marks.js';
import { abandonOwner, confirmReplicated, lateGrants } from './undo.js';

/**
 * One acquisition call of a hash lock (RLock and its variants) from its first attempt to its outcome, and
 * the executor request of each of its attempts (see `Request`: the call's options are its fields, `send`
 * sends an attempt, `answered` goes on from its result in the reaction of the reply). One object per call:
 * a call granted at once makes no other (no options, no closures, no frame of the wait loop).
 *
 * Its guard against lost replies: `before` is the owner's hold count before the call; once an attempt
 * failed ambiguously (or an earlier call of the owner left the lock unsettled, see
 * `LockContext.unsettled`), attempts ask the script not to add a second hold.
 */
export class Acquisition implements Request<AcquireResult, unknown>, Taken, Waiter {
  readonly idempotent = true;
  /** Attempts sent. */
  sent = 0;
  /** Monotonic send time of the latest attempt. */
  sentAt = 0;
  /** An attempt is in flight and counted in `ctx.flights` (context owners only). */
  flying = false;
  /** The call is over: replies of attempts it gave up on no longer say anything about it. */
  done = false;
  /** The first attempt was refused and the lock's wait runs (`LockHooks.waitAfter`): attempts answer the wait. */
  waiting = false;
  /** The grant, once the call got the lock. */
  grant!: Grant;
  /** The unsettled mark this call's ambiguous failure left (or extended), if any (see `lateGrants`). */
  mark: Unsettled | undefined;

  constructor(
    readonly lock: LockHooks,
    readonly ctx: LockContext,
    readonly owner: string,
    /** The caller's wait time in ms (0: one attempt, Infinity: no limit). */
    readonly waitMs: number,
    /** The end of the wait, as `waitDeadline` gives it (the executor's `deadline` of every attempt). */
    readonly deadline: number | undefined,
    /** The caller's lease in ms; undefined for the watchdog. */
    readonly leaseMs: number | undefined,
    /** Lease in ms written by every attempt (the watchdog's when none was given). */
    readonly lease: number,
    readonly signal: AbortSignal | undefined,
    readonly probe: AcquireProbe,
    /** Monotonic ms the call started at. */
    readonly started: number,
    /** The owner's hold record before the call, if any. */
    readonly hold: Hold | undefined,
    /** Its count, sent with every attempt; 0 once Redis answered that those holds had ended (see `holdEnded`). */
    public before: number,
    public armed: boolean,
    /** The watchdog's registration of a call without a lease. */
    readonly renewal: WatchdogHold | undefined,
    /** The calling task's note of a contextless call (see task-holds.ts): marked done when the call ends. */
    readonly note: TaskHold | undefined,
    /** The owner was made for this call alone: abandoned (`abandonOwner`) when it gets nothing. */
    readonly ownCall: boolean,
    /** The wait's channel as it was before the first attempt, and its `dropped` count then (see `waitMore`). */
    readonly liveBefore: Channel | undefined,
    readonly seen: number | undefined,
  ) {}

  /** What a WRONGTYPE reply is reported as (read by the executor only then). */
  get expects(): { key: string; kind: ObjectKind } {
    return this.lock.expects;
  }

  send(): Promise<AcquireResult> {
    return send(this);
  }

  answered(result: AcquireResult): unknown {
    return answered(this, result);
  }

  failed(): void {
    attemptFailed(this);
  }

  onAmbiguous(): void {
    ambiguous(this);
  }

  onLateResults(results: AcquireResult[]): Promise<void> | undefined {
    return lateGrants(this.lock, this.ctx, this.owner, this.mark, this.lease, results);
  }

  /** An attempt of the wait after the refused first attempt (`wake`: what woke the waiter; undefined when it polls). */
  next(wake: 'message' | 'timer' | undefined): Promise<Attempt<Grant>> {
    this.lock.core.checkOpen();
    this.probe.attempt(wake);
    return attempt(this) as Promise<Attempt<Grant>>;
  }
}

/**
 * Acquires `lock` for `ctx`'s owner; registers the watchdog first and records the hold in `ctx`. When an
 * earlier call of the owner left the lock unsettled (a lost reply), the guard is armed from the first
 * attempt: a grant of that call still in Redis is adopted as this acquisition. `note`: the calling task's
 * note of a contextless call (marked done when the call ends); `ownCall`: `ctx` was made for this call
 * alone (abandoned when it gets nothing). Measured by the observer (`Observer.acquire`) unless it
 * acquires quietly. Never throws: failures reject.
 */
export function acquire(lock: LockHooks, ctx: LockContext, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, note?: TaskHold, ownCall = false): Promise<Taken | undefined> {
  const owner = lock.ownerOf(ctx);
  if (lock.core.observe.acquiresQuietly) return begin(lock, ctx, owner, waitMs, leaseMs, signal, QUIET_PROBE, note, ownCall);
  return measured(lock, ctx, owner, waitMs, leaseMs, signal, note, ownCall);
}

/**
 * `acquire` measured by the observer (`Observer.acquire`), whose call's result is the grant (the
 * `relock:acquire` message's `result`). Apart from `acquire` so that an unmeasured call makes none of its closures.
 */
function measured(lock: LockHooks, ctx: LockContext, owner: string, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, note: TaskHold | undefined, ownCall: boolean): Promise<Taken | undefined> {
  let taken: Taken | undefined;
  const run = (probe: AcquireProbe): Promise<Grant | undefined> => begin(lock, ctx, owner, waitMs, leaseMs, signal, probe, note, ownCall).then((t) => (taken = t)?.grant);
  return lock.core.observe.acquire(lock.metricKind, lock.name, lock.key, owner, waitMs, signal, run).then(() => taken);
}

/**
 * `acquire` for `owner` (`ctx`'s), telling `probe` (the observer's, see `Observer.acquire`) of its
 * attempts: sends the first attempt at once (see `Acquisition`).
 */
function begin(lock: LockHooks, ctx: LockContext, owner: string, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, probe: AcquireProbe, note: TaskHold | undefined, ownCall: boolean): Promise<Taken | undefined> {
  const { core, holdKey } = lock;
  try {
    core.checkOpen();
  } catch (error) {
    if (note) note.done = true;
    if (ownCall) abandonOwner(lock, ctx);
    return Promise.reject(error);
  }
  const started = monotonic();
  const renewal = leaseMs === undefined ? lock.registerHold(owner) : undefined;
  const mark = unsettled(ctx, holdKey);
  if (mark && mark.until <= started) settle(ctx, holdKey);
  const hold = ctx.holds.get(holdKey);
  // The channel as it is before the first attempt (see `waitMore`), when the call may wait on it (its
  // name is made only when some channel is subscribed: a free lock's holder keeps none).
  const channel = waitMs > 0 && !core.channels.empty ? lock.waitChannel(owner) : undefined;
  const liveBefore = channel === undefined ? undefined : core.channels.live(channel);
  const acq = new Acquisition(lock, ctx, owner, waitMs, waitDeadline(waitMs, started), leaseMs, leaseMs ?? core.watchdog.leaseMs, signal, probe, started, hold, hold?.count ?? 0, mark !== undefined && mark.until > started, renewal, note, ownCall, liveBefore, liveBefore?.dropped);
  lock.beginWait(owner, waitMs);
  probe.attempt(undefined);
  return attempt(acq) as Promise<Taken | undefined>;
}

/**
 * Sends one attempt of `acq` (an executor request, with retries of transient failures and the guard
 * against lost replies); its answer goes through `answered`. While it is in flight, unlocks of a context
 * owner wait (`ctx.flights`); a granting attempt stays in flight until its hold is recorded (`finish`).
 */
function attempt(acq: Acquisition): Promise<unknown> {
  // Only an unlock by a context owner can race with its acquisition (a contextless unlock releases a
  // granted hold), so detached owners skip the count.
  if (!acq.ctx.detached) {
    takeOff(acq.ctx, acq.lock.holdKey);
    acq.flying = true;
  }
  return acq.lock.core.executor.request('lock.acquire', acq);
}

/** Sends one acquire script of `acq` (its guard armed after a lost reply, see `Acquisition`): the executor's `send`. */
function send(acq: Acquisition): Promise<AcquireResult> {
  const { lock } = acq;
  acq.sent++;
  acq.sentAt = monotonic();
  const guard = acq.armed ? String(acq.before) : '';
  const mark = acq.armed ? unsettled(acq.ctx, lock.holdKey) : undefined;
  if (mark) mark.tried = true;
  const sent = lock.runAcquire(acq.owner, String(acq.lease), guard, String(acq.before));
  return lock.core.replicaSync ? replicated(lock, acq.owner, sent) : sent;
}

/** `syncReplicas`: the result of `sent`, once a replica acknowledged a grant (undone when none did). */
async function replicated(lock: LockHooks, owner: string, sent: Promise<AcquireResult>): Promise<AcquireResult> {
  const result = await sent;
  if (result.granted) await confirmReplicated(lock, owner);
  return result;
}

/**
 * The answer to an attempt of `acq` (the executor's `answered`). `'lost'` (the owner's holds had ended
 * without this client knowing): asked again with the count corrected, as the same attempt. Busy: the
 * lock is settled (the latest attempt found it busy, so no earlier attempt's grant is in Redis); the
 * first attempt then goes on with the lock's wait (`waitAfter`), or ends the call when it may not wait.
 * Granted: the call ends (`finish`). An attempt of the wait answers the wait loop with an `Attempt`.
 */
function answered(acq: Acquisition, result: AcquireResult): unknown {
  const { lock } = acq;
  if (result.granted) {
    settle(acq.ctx, lock.holdKey);
    const grant: Grant = { sentAt: acq.sentAt, token: result.token };
    return acq.waiting ? { acquired: true, value: grant } : finish(acq, grant);
  }
  if (result.lost) {
    holdEnded(acq);
    return lock.core.executor.request('lock.acquire', acq);
  }
  settle(acq.ctx, lock.holdKey);
  land(acq);
  acq.probe.busy();
  const refused: Refused = { acquired: false, retryAfterMs: result.ttl };
  if (acq.waiting) return refused;
  if (acq.waitMs <= 0) return finish(acq, undefined);
  acq.waiting = true;
  return lock.waitAfter(acq, refused).then(
    (grant) => finish(acq, grant),
    (error: unknown) => {
      fail(acq);
      throw error;
    },
  );
}

/** An attempt of `acq` failed for good (the executor's `failed`): it is over; a first attempt's call ends. */
function attemptFailed(acq: Acquisition): void {
  land(acq);
  if (!acq.waiting) fail(acq);
}

/** An attempt of `acq` failed in a way that leaves its effect unknown: the guard is armed, the lock unsettled. */
function ambiguous(acq: Acquisition): void {
  acq.armed = true;
  acq.mark = unsettle(acq.ctx, acq.lock.holdKey, acq.sentAt + acq.lease);
}

/**
 * Ends `acq` with `grant` (or without the lock): a grant is confirmed to the watchdog and recorded in the
 * owner's context (and, for a detached owner, its lease end, see `remember`); an owner made for the call
 * alone that got nothing is abandoned. Resolves to the call's `Taken`, after the lock's wait hooks are
 * done (`endWait`).
 */
function finish(acq: Acquisition, grant: Grant | undefined): Taken | undefined | Promise<Taken | undefined> {
  const { ctx, leaseMs, lock } = acq;
  const { core } = lock;
  let holds = 0;
  if (grant) {
    acq.renewal?.confirm(grant.sentAt);
    // The hold's start serves the debug log alone: not read (nor kept as a heap number) otherwise.
    holds = recordAcquired(ctx, lock.holdKey, leaseMs === undefined, core.debug ? monotonic() : 0).count;
    if (ctx.detached) remember(ctx, leaseMs === undefined ? Infinity : grant.sentAt + leaseMs);
    acq.grant = grant;
  }
  acq.done = true;
  if (!grant) acq.renewal?.abandon();
  land(acq);
  if (acq.note) acq.note.done = true;
  if (!grant && acq.ownCall) abandonOwner(lock, ctx);
  const leaving = lock.endWait(acq.owner, acq.waitMs, grant !== undefined);
  if (grant && core.debug) {
    core.log.debug({ lock: lock.name, owner: acq.owner, holds, waitMs: Math.round(monotonic() - acq.started), leaseMs: leaseMs ?? 'watchdog' }, 'lock acquired');
  }
  const taken = grant ? acq : undefined;
  return leaving ? leaving.then(() => taken) : taken;
}

/** Ends `acq` on an error: nothing was acquired (the error goes to the caller). */
function fail(acq: Acquisition): void {
  acq.done = true;
  acq.renewal?.abandon();
  land(acq);
  if (acq.note) acq.note.done = true;
  if (acq.ownCall) abandonOwner(acq.lock, acq.ctx);
  void acq.lock.endWait(acq.owner, acq.waitMs, false);
}

/**
 * Redis answered that the owner's hold had ended although this client counted `acq.before` holds (its
 * lease ran out, or the key was deleted, without the client knowing): the record of those holds is
 * dropped (unless a grant to the same owner made a new one since), the watchdog stops renewing them and
 * reports them lost (`lockLost`, as its next renewal would have), and the acquisition goes on from the
 * owner's count as recorded now, so that a retry's guard is the count the script wrote on. The watchdog
 * is told whatever the record's flags say: it knows what it renews, and the flags can say "leased" for a
 * hold it renews (a leased handle released after `unlock()` had given back its hold takes a renewed
 * hold's flag), which then stayed unreported and was renewed on as the retry's grant.
 */
function holdEnded(acq: Acquisition): void {
  const { ctx, lock } = acq;
  const { holdKey } = lock;
  if (acq.hold !== undefined && ctx.holds.get(holdKey) === acq.hold) {
    lock.core.watchdog.holdsEnded(lock.key, acq.owner);
    recordReleased(ctx, holdKey, true, true);
  }
  acq.before = ctx.holds.get(holdKey)?.count ?? 0;
}

/** Ends the attempt in flight of `acq`, if any. */
function land(acq: Acquisition): void {
  if (!acq.flying) return;
  acq.flying = false;
  landed(acq.ctx, acq.lock.holdKey);
}

/** Records the lease end of a contextless hold (Infinity while the watchdog renews it), for `stillHolds` (caller.ts). */
export function remember(ctx: LockContext, until: number): void {
  ctx.until = until;
  ctx.releasing = false;
}
