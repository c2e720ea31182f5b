/**
 * Who acquires and who releases, for a call made on a lock object (`lock()`, `tryLock()`, `acquire()`,
 * `unlock()`): inside a context its owner is the context that holds the lock, else the innermost context;
 * outside any context each acquisition is an owner of its own, noted in the calling task (task-holds.ts)
 * for that task's `unlock()`, and a task that acquires again what its newest acquisition still holds is
 * refused (`ReentryNeedsContextError`) instead of waiting for itself. The calls then go down to the
 * engine: `acquire` (acquire.ts) and `unlock` (unlock.ts).
 * @internal Not exported from the package.
 */
import { clientDetachedContext, detachedContext, type LockContext } from '../../context.js';
import { IllegalMonitorStateError, OwnerUnknownError, ReentryNeedsContextError } from '../../errors.js';
import { newestAcquisition, newestNote, noteRefusal, noteTaskHold, type TaskHold } from '../../task-holds.js';
import { monotonic } from '../../time.js';
import { acquire } from './acquire.js';
import { ignore, type LockHooks, type Taken } from './hooks.js';
import { unlock, type Contextless } from './unlock.js';

/**
 * Acquires `lock` for the caller (`owner`, else its context, else a new detached owner): resolves to the
 * owner and the grant, or undefined when the wait ran out. An owner made for this call alone is abandoned
 * when it got nothing. `forHandle`: the call is `acquire()`'s, released through its handle (no task note).
 * Never throws: failures reject.
 */
export function acquireForCaller(lock: LockHooks, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, owner?: LockContext, forHandle = false): Promise<Taken | undefined> {
  let ctx = owner ?? lock.context();
  if (!ctx) {
    // Outside a context, a task whose newest note of the object holds it would wait for itself: refused,
    // nothing sent. A note still in flight is no refusal: siblings started in one synchronous run, and the
    // jobs a dispatcher starts, see such notes of tasks started before them (see task-holds.ts).
    const earlier = newestAcquisition(lock);
    if (earlier?.done && stillHolds(lock, earlier.owner)) {
      // The refusal is noted too: the hold it saw may be a sibling's, so this task's unlock() must not
      // release it (it throws IllegalMonitorStateError: relock cannot show the caller owns it).
      noteRefusal(lock, detachedContext());
      return Promise.reject(new ReentryNeedsContextError(lock.name));
    }
    ctx = clientDetachedContext(lock.core.id);
  }
  // A contextless lock()/tryLock() notes its owner in the caller's task, for that task's unlock() (see
  // task-holds.ts); a handle's acquisition is released through the handle.
  const note = owner === undefined && ctx.detached && !forHandle ? noteTaskHold(lock, ctx) : undefined;
  const call = acquire(lock, ctx, waitMs, leaseMs, signal, note, true);
  if (note) note.call = call;
  return call;
}

/** Whether the contextless owner `ctx` holds `lock` as far as this client knows: recorded, its lease not run out, its renewals not failed. */
function stillHolds(lock: LockHooks, ctx: Contextless): boolean {
  const until = ctx.until!;
  return ctx.holds.has(lock.holdKey) && until > monotonic() && (until < Infinity || lock.core.watchdog.renews(lock.key, lock.ownerOf(ctx)));
}

/**
 * Releases one hold of the caller (`RLock.unlock()`): inside a context the context's; outside any context
 * the hold of the calling task's newest `lock()`/`tryLock()` of this object (waited for while in flight),
 * `OwnerUnknownError` when the task made none (nothing sent). Never throws: failures reject.
 */
export function unlockForCaller(lock: LockHooks): Promise<void> {
  const ctx = lock.context();
  if (ctx) return unlock(lock, ctx);
  // Outside a context: the caller's newest note of this object alone (see task-holds.ts), never another hold.
  const note = newestNote(lock);
  if (!note) return Promise.reject(new OwnerUnknownError(lock.name, lock.ownerOf(detachedContext())));
  // Its acquisition is in flight: its outcome first, so that a grant is released, not renewed forever.
  if (!note.done) return afterCall(lock, note);
  return unlockNoted(lock, note.owner);
}

/** `unlockNoted` once the acquisition call of `note` is over; apart from `unlockForCaller` so that an unlock of a finished call makes no closure. */
function afterCall(lock: LockHooks, note: TaskHold): Promise<void> {
  return note.call!.then(ignore, ignore).then(() => unlockNoted(lock, note.owner));
}

/** Releases the hold of the contextless owner `held` (the caller's newest note), or throws `IllegalMonitorStateError` when it holds none. */
function unlockNoted(lock: LockHooks, held: Contextless): Promise<void> {
  // Refused, timed out, aborted, released, or being released by another unlock(): nothing of the caller's to release.
  if (held.releasing! || !held.holds.has(lock.holdKey)) return Promise.reject(new IllegalMonitorStateError(lock.name, lock.ownerOf(held)));
  // Marked while its unlock runs, so that a concurrent unlock() of the same note throws (cleared when it ends).
  held.releasing = true;
  return unlock(lock, held, undefined, undefined, held);
}

/** The owner whose hold count `getHoldCount()` reads: the caller's context, or outside any context the owner of its newest note of `lock` (none: a new owner, which holds nothing). */
export function countedOwner(lock: LockHooks): LockContext {
  return lock.context() ?? newestNote(lock)?.owner ?? detachedContext();
}
