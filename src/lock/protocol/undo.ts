/**
 * Undoing grants nobody knows of: a grant that went through after its call gave up (a late answer, see
 * `Request.onLateResults`), a grant whose reply was lost and whose owner will not acquire again
 * (`abandonOwner`), and a `syncReplicas` grant no replica acknowledged (`confirmReplicated`). Each is one
 * owner-checked unlock (the lock's `runUnlock`), retried while Redis is unreachable.
 * @internal Not exported from the package.
 */
import { pause } from '../../backoff.js';
import type { LockContext, Unsettled } from '../../context.js';
import { ClientClosedError, RedisUnavailableError } from '../../errors.js';
import { monotonic } from '../../time.js';
import type { AcquireResult } from '../scripts.js';
import type { LockHooks } from './hooks.js';
import { settle, unsettled } from './marks.js';

/** First and longest pause (ms) between tries of a compensating release while Redis is unreachable. */
const UNDO_RETRY_MS = 100;
const UNDO_RETRY_CAP_MS = 2000;

/**
 * Releases one hold of `owner` that went through without its caller knowing (a grant that came after
 * the call gave up, or whose reply was lost), retrying while Redis is unreachable until `until`
 * (monotonic ms: the hold has expired by then) or the client shuts down. Retries replay the first
 * answer (one unlock latch), so at most one hold is released.
 */
export async function undo(lock: LockHooks, owner: string, until: number): Promise<void> {
  const { core } = lock;
  const latch = core.latches.next(lock.latchPrefix);
  let attempts = 0;
  try {
    for (let delay = UNDO_RETRY_MS; ; delay = Math.min(2 * delay, UNDO_RETRY_CAP_MS)) {
      try {
        await core.executor.run('lock.unlock', () => lock.runUnlock(owner, latch, ++attempts, ''), { idempotent: true });
        return;
      } catch (error) {
        if (error instanceof ClientClosedError) return;
        if (!(error instanceof RedisUnavailableError) || monotonic() + delay >= until) {
          core.log.warn({ lock: lock.name, owner, err: error }, 'could not release an acquisition its caller does not know of; it expires with its lease');
          return;
        }
      }
      await pause(delay, core.closing);
    }
  } catch {
    // Shut down while pausing: the hold expires with its lease.
  } finally {
    core.latches.release(latch);
  }
}

/**
 * A grant that went through after the call of `ctx`'s `owner` gave up (`results`: the late answers):
 * undo it, unless an attempt that adopts such a grant (armed guard) was sent since the mark the call's
 * failure left (`callMark`): the mark then stays until the owner adopts the grant or, abandoned, releases
 * it; once adopted (the armed attempt was granted and settled the lock, possibly before this report came)
 * the grant is the owner's hold and is not undone. A call that left no mark (aborted) goes by the owner's
 * current mark. `lease`: the attempts' lease (ms).
 */
export function lateGrants(lock: LockHooks, ctx: LockContext, owner: string, callMark: Unsettled | undefined, lease: number, results: AcquireResult[]): Promise<void> | undefined {
  if (!results.some((r) => r.granted)) return undefined;
  const mark = callMark ?? unsettled(ctx, lock.holdKey);
  if (mark?.tried) return undefined;
  if (mark && unsettled(ctx, lock.holdKey) === mark) settle(ctx, lock.holdKey);
  return undo(lock, owner, monotonic() + lease);
}

/**
 * `ctx` will make no more acquisitions of `lock`. When it is a detached owner (one contextless call,
 * or one member of a group call) whose attempt's reply was lost, so that Redis may hold a grant nobody
 * knows of, that grant is released in the background, retried until Redis answers or its lease ends.
 * A context owner keeps its unsettled mark instead: its next acquisition adopts the grant.
 */
export function abandonOwner(lock: LockHooks, ctx: LockContext): void {
  const mark = ctx.detached ? ctx.unsettled?.get(lock.holdKey) : undefined;
  if (!mark) return;
  ctx.unsettled!.delete(lock.holdKey);
  if (mark.until > monotonic()) void undo(lock, lock.ownerOf(ctx), mark.until);
}

/** `syncReplicas`: a grant no replica acknowledged is undone before the error goes up (Redisson #4822). */
export async function confirmReplicated(lock: LockHooks, owner: string): Promise<void> {
  try {
    await lock.core.replicaSync!.confirm(lock.key);
  } catch (error) {
    await undo(lock, owner, 0);
    throw error;
  }
}
