/**
 * Who acquires and who releases (src/lock/protocol/caller.ts) through its own API, `acquireForCaller` and
 * `unlockForCaller`, against a real redis-server: outside any context each call is an owner of its own,
 * noted in the calling task (task-holds.ts) for that task's unlock; a task that acquires again what its
 * newest acquisition still holds is refused (`ReentryNeedsContextError`, nothing sent); an unlock without
 * a note is refused (`OwnerUnknownError`); inside a context the context owns and reenters.
 */
import { describe, expect, it } from '@jest/globals';
import { currentContext, runInContext } from '../../../src/context.js';
import { IllegalMonitorStateError, OwnerUnknownError, ReentryNeedsContextError } from '../../../src/index.js';
import { acquireForCaller, unlockForCaller } from '../../../src/lock/protocol/caller.js';
import { unlock } from '../../../src/lock/protocol/unlock.js';
import { newestNote } from '../../../src/task-holds.js';
import { useRedis } from '../../support/harness.js';
import { lockClient, uniqueName, waitUntil } from '../../support/helpers.js';
import { holdCounts, newContext, releaseInFlight, spy, type Spied } from './engine.js';

const env = useRedis();

/** A new lock object seen through counting hooks (notes are kept per lock object: a new one has none). */
const newLock = (): Spied => spy(lockClient(env.redis).getLock(`{${uniqueName('caller')}}`));

describe('acquireForCaller and unlockForCaller (protocol/caller.ts), outside any context', () => {
  it("a contextless acquisition is an owner of its own, noted in the calling task; the task's unlock releases exactly it", async () => {
    const hooks = newLock();
    const taken = await acquireForCaller(hooks, 0, undefined, undefined);
    expect(taken?.ctx.detached).toBe(true);
    const note = newestNote(hooks);
    expect(note?.owner).toBe(taken!.ctx);
    expect(note?.done).toBe(true);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [hooks.ownerOf(taken!.ctx)]: '1' });
    await unlockForCaller(hooks);
    expect(await env.redis.exists(hooks.key)).toBe(0);
    // Released: the note holds nothing now, and a second unlock has nothing of the caller's to release.
    await expect(unlockForCaller(hooks)).rejects.toBeInstanceOf(IllegalMonitorStateError);
    expect(hooks.unlocks).toHaveLength(1);
  });

  it('a task whose newest acquisition still holds the lock is refused re-entry without a context: nothing sent, and its unlock then releases nothing', async () => {
    const hooks = newLock();
    const taken = await acquireForCaller(hooks, 0, undefined, undefined);
    await expect(acquireForCaller(hooks, 5000, undefined, undefined)).rejects.toBeInstanceOf(ReentryNeedsContextError);
    expect(hooks.acquires).toHaveLength(1);
    // The refusal is noted: the hold it saw may be a sibling task's, so this task's unlock must not release it.
    expect(newestNote(hooks)?.refusal).toBe(true);
    await expect(unlockForCaller(hooks)).rejects.toBeInstanceOf(IllegalMonitorStateError);
    expect(hooks.unlocks).toHaveLength(0);
    expect(await env.redis.exists(hooks.key)).toBe(1);
    // The next acquisition still sees the hold and is refused again.
    await expect(acquireForCaller(hooks, 0, undefined, undefined)).rejects.toBeInstanceOf(ReentryNeedsContextError);
    await unlock(hooks, taken!.ctx);
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });

  it('a task whose newest acquisition holds nothing (refused, or its lease ended) acquires again', async () => {
    const hooks = newLock();
    const holder = newContext();
    await acquireForCaller(hooks, 0, undefined, undefined, holder);
    expect(await acquireForCaller(hooks, 0, undefined, undefined)).toBeUndefined();
    await unlock(hooks, holder);
    const leased = await acquireForCaller(hooks, 0, 150, undefined);
    expect(leased).toBeDefined();
    await waitUntil(async () => (await env.redis.exists(hooks.key)) === 0, 2000, 10, 'the lease to end');
    await waitUntil(() => performance.now() > leased!.grant.sentAt + 150, 1000, 5, 'the local lease end');
    const again = await acquireForCaller(hooks, 0, undefined, undefined);
    expect(again?.ctx).not.toBe(leased!.ctx);
    await unlockForCaller(hooks);
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });

  it('an unlock in a task that made no acquisition of the object is refused with OwnerUnknownError (nothing sent)', async () => {
    const hooks = newLock();
    const other = newContext();
    await acquireForCaller(hooks, 0, undefined, undefined, other);
    await expect(unlockForCaller(hooks)).rejects.toBeInstanceOf(OwnerUnknownError);
    // A handle's acquisition (forHandle) is released through its handle: it leaves no note either.
    const fresh = newLock();
    const forHandle = await acquireForCaller(fresh, 0, undefined, undefined, undefined, true);
    expect(newestNote(fresh)).toBeUndefined();
    await expect(unlockForCaller(fresh)).rejects.toBeInstanceOf(OwnerUnknownError);
    expect(hooks.unlocks.length + fresh.unlocks.length).toBe(0);
    await unlock(hooks, other);
    await unlock(fresh, forHandle!.ctx);
  });

  it('a task keeps its newest 8 notes that are over and hold nothing: after lock-unlock rounds on nine objects, an unlock of the oldest is refused as never acquired (OWNER_UNKNOWN), of each of the eight newest as not held by its own acquisition (ILLEGAL_MONITOR_STATE)', async () => {
    // The bound (MAX_NOTES in task-holds.ts) saves memory; what a caller sees of it is which refusal an unlock
    // of an idle object gets: with the task's note kept, "your acquisition holds nothing" (ILLEGAL_MONITOR_STATE,
    // naming that acquisition's owner); with it dropped, "this task made none" (OWNER_UNKNOWN, a subclass, hence
    // the codes). Nothing is sent either way.
    const locks = Array.from({ length: 9 }, () => newLock());
    const owners: string[] = [];
    for (const hooks of locks) {
      const taken = await acquireForCaller(hooks, 0, undefined, undefined);
      owners.push(hooks.ownerOf(taken!.ctx));
      await unlockForCaller(hooks);
    }
    // The ninth acquisition's note, made while the eight before it were idle, kept the seven newest of them.
    await expect(unlockForCaller(locks[0])).rejects.toMatchObject({ code: 'OWNER_UNKNOWN' });
    for (let i = 1; i < 9; i++) await expect(unlockForCaller(locks[i])).rejects.toMatchObject({ code: 'ILLEGAL_MONITOR_STATE', owner: owners[i] });
    expect(locks.map((hooks) => hooks.unlocks.length)).toEqual(Array(9).fill(1));
  });

  it("an unlock while the task's acquisition is in flight waits for its outcome and releases the grant", async () => {
    const hooks = newLock();
    const { taken } = await releaseInFlight(hooks, () => acquireForCaller(hooks, 0, undefined, undefined), () => unlockForCaller(hooks));
    expect(taken).toBeDefined();
    expect(hooks.unlocks).toHaveLength(1);
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });
});

describe('acquireForCaller and unlockForCaller, inside a context', () => {
  it('the context owns the lock and reenters it; its unlocks release its holds', async () => {
    const hooks = newLock();
    await runInContext(async () => {
      const ctx = currentContext();
      const first = await acquireForCaller(hooks, 0, undefined, undefined);
      expect(first?.ctx).toBe(ctx);
      expect(newestNote(hooks)).toBeUndefined();
      expect((await acquireForCaller(hooks, 0, undefined, undefined))?.ctx).toBe(ctx);
      expect(await holdCounts(env.redis, hooks.key)).toEqual({ [hooks.ownerOf(ctx!)]: '2' });
      await unlockForCaller(hooks);
      await unlockForCaller(hooks);
    });
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });
});
