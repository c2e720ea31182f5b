import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockContext } from './context.js';
import { processWide } from './shared-state.js';

/**
 * The contextless acquisitions a task made, so that its `unlock()` releases its own hold.
 *
 * Outside any context every acquisition of a lock object is an owner of its own (see `RLock`). Which of
 * them an `unlock()` releases used to be "the object's current holder", whoever called: a task whose lease
 * ran out and that unlocked late released the next holder's hold, and let a third task in beside it.
 * Redisson's unlock is owner-checked by thread; a Node task has no thread id, but it has an async context.
 * An acquisition call notes its owner in the calling task's async context (`AsyncLocalStorage.enterWith`,
 * before the call's first `await`, so the caller's continuation sees the note); `unlock()` outside a
 * context looks for the caller's own notes first. A call from a task that made no acquisition of the
 * object (a lock taken in one callback, released in another) finds none and releases the object's current
 * contextless holder, as before.
 *
 * A task keeps its newest note of each object it tried, granted or not, so that an `unlock()` after a
 * failed `tryLock()` throws `IllegalMonitorStateError` also when the task has used other lock objects
 * since. One limit is Node's: tasks started in one synchronous run (the callbacks of
 * `Promise.all(items.map(async …))`) begin in their caller's async context, so a callback sees the notes
 * that an earlier callback made before its first `await`, as its own. Such siblings' `unlock()` calls
 * are told apart only through handles (`acquire()`) or a context each (`runInContext`).
 *
 * A note is three words; a task keeps the notes of acquisitions still in flight or whose owner still records
 * a hold, and its newest note of each lock object, at most `MAX_NOTES` (the newest).
 */
export interface TaskHold {
  /** The lock object the acquisition was made on. */
  readonly lock: object;
  /** Its owner: the detached context of the call. */
  readonly owner: LockContext;
  /** The acquisition call is over (granted or not). */
  done: boolean;
}

/** The notes a task keeps (the newest first); older ones beyond it are dropped, as their unlocks fall back to the object's holder. */
const MAX_NOTES = 8;

/** One store per process, shared by the ES module and CommonJS builds (see shared-state.ts). */
const notes = processWide('task-notes', () => new AsyncLocalStorage<readonly TaskHold[]>());

/**
 * Notes, in the calling task's async context, that `owner` (a detached context) makes a contextless
 * acquisition of `lock`. Call it synchronously at the start of the acquisition call, before any `await`.
 * Older notes of the task are kept while their call is in flight or their owner records a hold. Returns
 * the note: set `done` when the call is over.
 */
export function noteTaskHold(lock: object, owner: LockContext): TaskHold {
  const note: TaskHold = { lock, owner, done: false };
  const kept: TaskHold[] = [note];
  for (const older of notes.getStore() ?? []) {
    if (kept.length === MAX_NOTES) break;
    if (!older.done || !older.owner.holds.isEmpty() || !kept.some((k) => k.lock === older.lock)) kept.push(older);
  }
  notes.enterWith(kept);
  return note;
}

/** The owners of the calling task's noted acquisitions of `lock`, the newest first. */
export function taskHolds(lock: object): LockContext[] {
  const found: LockContext[] = [];
  for (const note of notes.getStore() ?? []) if (note.lock === lock) found.push(note.owner);
  return found;
}
