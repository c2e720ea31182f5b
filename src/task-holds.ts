import { AsyncLocalStorage, executionAsyncResource } from 'node:async_hooks';
import type { LockContext } from './context.js';
import { processWide } from './shared-state.js';

/**
 * The contextless acquisitions a task made, so that its `unlock()` releases exactly its own hold, or refuses.
 *
 * Node cannot name a task; relock knows a contextless acquisition's task only through the caller's async
 * context. An acquisition call (`lock()`, `tryLock()`) notes its owner in the calling task's async context
 * (`AsyncLocalStorage.enterWith`, before the call's first `await`, so the caller's continuation sees the
 * note). `unlock()` outside a context looks only at the newest note of the object the caller can see (see
 * `RLock.unlock`): it waits for it while it is in flight, releases exactly it while it holds, and refuses
 * otherwise; with no note it refuses (`OwnerUnknownError`): it never guesses another holder.
 *
 * On Node 20 and 22 `enterWith` stores the note on the current async resource, which a later, unrelated
 * callback may run on again (the next request on a keep-alive socket, the next tick of a `setInterval`):
 * that callback would see the note as its own. So once the synchronous run in which a note was made is over
 * (a microtask), the resource's store is put back as it was before the run; what the run started (promises,
 * timers, callbacks) copied the note already and keeps it. Node 24 (AsyncContextFrame) has no such leak
 * (`kResourceStore` is undefined there): nothing to put back.
 *
 * What no async context can tell: tasks started in one synchronous run (the callbacks of
 * `items.map(async …)`, the jobs a dispatcher starts) begin in their caller's context, so a task sees the
 * notes that tasks started before it in that run made before their first `await`, and so do the tasks the
 * caller starts after its next `await`. The newest note a task sees is its own whenever it made one since;
 * a task that made none sees another's (see `RLock.unlock` and `acquireForCaller` (lock/protocol/caller.ts) for what is then
 * refused).
 *
 * A task keeps every note of an acquisition still in flight or whose owner still records a hold (so a task
 * that holds 250 locks unlocks each of them), and, of the notes that are over and hold nothing, its newest
 * of each object it tried, at most `MAX_NOTES` (the newest).
 */
export interface TaskHold {
  /** The lock object the acquisition was made on. */
  readonly lock: object;
  /** Its owner: the detached context of the call (for a group object, its owner on the first member). */
  readonly owner: LockContext;
  /** The acquisition call is over (granted or not). */
  done: boolean;
  /** The call's promise, settled when it is over (for an `unlock()` that waits for it); set by the lock. */
  call?: Promise<unknown>;
  /**
   * A re-acquire refused with `ReentryNeedsContextError` (see `noteRefusal`): opaque to `unlock()` (which then
   * releases nothing), transparent to the next acquisition's re-acquire check (which keeps refusing).
   */
  refusal?: true;
}

/** The notes over and holding nothing a task keeps (the newest first); older ones beyond it are dropped. */
const MAX_NOTES = 8;

/** One store per process, shared by the ES module and CommonJS builds (see shared-state.ts). */
const notes = processWide('task-notes', () => new AsyncLocalStorage<readonly TaskHold[]>());

/** The symbol under which Node 20/22 keep an AsyncLocalStorage's store on each async resource; undefined on Node 24. */
const resourceStore = (notes as unknown as { kResourceStore?: symbol }).kResourceStore;

/** The async resources whose store a microtask will put back (see `restoreAfterRun`). */
const restoring = new WeakSet<object>();

/**
 * On Node 20/22, puts the current async resource's store back to `previous` (what it was before this
 * synchronous run's first note) once the run is over, so that a later callback on the resource does not see
 * the run's notes. Once per resource and run.
 */
function restoreAfterRun(previous: readonly TaskHold[] | undefined): void {
  if (resourceStore === undefined) return;
  const resource = executionAsyncResource();
  if (restoring.has(resource)) return;
  restoring.add(resource);
  queueMicrotask(() => {
    restoring.delete(resource);
    (resource as Record<symbol, unknown>)[resourceStore] = previous;
  });
}

/**
 * Notes, in the calling task's async context, that `owner` (a detached context) makes a contextless
 * acquisition of `lock`. Call it synchronously at the start of the acquisition call, before any `await`.
 * Older notes of the task are kept while their call is in flight or their owner records a hold. Returns
 * the note: set `done` when the call is over.
 */
export function noteTaskHold(lock: object, owner: LockContext): TaskHold {
  const previous = notes.getStore();
  restoreAfterRun(previous);
  const note: TaskHold = { lock, owner, done: false };
  const kept: TaskHold[] = [note];
  let idle = 1;
  // Indexed loops here and below: a for-of allocates an iterator and its results per call until the code is optimised.
  for (let i = 0; previous !== undefined && i < previous.length; i++) {
    const older = previous[i];
    if (!older.done || !older.owner.holds.isEmpty()) kept.push(older);
    else if (idle < MAX_NOTES && noteOf(kept, older.lock) === undefined) {
      kept.push(older);
      idle++;
    }
  }
  notes.enterWith(kept);
  return note;
}

/** The first note of `lock` in `list`, newest first (an indexed loop: no closure, as `find` would make, nor iterator). */
function noteOf(list: readonly TaskHold[] | undefined, lock: object): TaskHold | undefined {
  for (let i = 0; list !== undefined && i < list.length; i++) if (list[i].lock === lock) return list[i];
  return undefined;
}

/** The calling task's newest note of `lock`, if it can see one (a refusal too: see `noteRefusal`). */
export function newestNote(lock: object): TaskHold | undefined {
  return noteOf(notes.getStore(), lock);
}

/** The calling task's newest note of `lock` that is an acquisition (not a refusal), for the re-acquire check. */
export function newestAcquisition(lock: object): TaskHold | undefined {
  const list = notes.getStore();
  for (let i = 0; list !== undefined && i < list.length; i++) if (list[i].lock === lock && !list[i].refusal) return list[i];
  return undefined;
}

/**
 * Notes, in the calling task, a contextless re-acquire of `lock` refused with `ReentryNeedsContextError`,
 * as an acquisition by `owner` (a new context that holds nothing) that is over. The hold the refusal saw
 * may be a sibling's (a task started in the synchronous run that made it sees its note), so the task's
 * next `unlock()` finds this note and releases nothing (`IllegalMonitorStateError`) instead of releasing
 * that hold; its next acquisition still sees the hold and is refused again.
 */
export function noteRefusal(lock: object, owner: LockContext): void {
  const note = noteTaskHold(lock, owner);
  note.done = true;
  note.refusal = true;
}
