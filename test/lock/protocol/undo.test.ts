/**
 * Undoing grants nobody knows of (src/lock/protocol/undo.ts) through its own API, against a real
 * redis-server: `lateGrants` (a grant that came after its call gave up: released, unless an armed attempt
 * that adopts it was sent since), `abandonOwner` (a detached owner's lost grant released in the
 * background; a context keeps its mark), and `undo`'s retries while Redis is unreachable, which replay
 * the first answer (one latch: one hold released). The grants are made with the lock's own acquire script.
 */
import { describe, expect, it } from '@jest/globals';
import { detachedContext } from '../../../src/context.js';
import { unsettle, unsettled } from '../../../src/lock/protocol/marks.js';
import { abandonOwner, lateGrants, undo } from '../../../src/lock/protocol/undo.js';
import { UNLOCK, type AcquireResult } from '../../../src/lock/scripts.js';
import { useRedis } from '../../support/harness.js';
import { lockClient, uniqueName, waitUntil } from '../../support/helpers.js';
import { holdCounts, newContext, spy, useProxied, type Spied } from './engine.js';

const env = useRedis();
const proxied = useProxied(env);

const LEASE = 30_000;
const BUSY: AcquireResult = { granted: false, ttl: 1000 };
const GRANTED: AcquireResult = { granted: true };
const newLock = (): Spied => spy(lockClient(env.redis).getLock(`{${uniqueName('undo')}}`));

/** Grants `owner` one hold of `hooks`' lock in Redis, as an attempt whose reply the client never read. */
async function grantBehindTheClientsBack(hooks: Spied, owner: string): Promise<void> {
  expect((await hooks.runAcquire(owner, String(LEASE), '', '0')).granted).toBe(true);
}

describe('lateGrants (protocol/undo.ts)', () => {
  it('a grant that came after its call gave up is released (one owner-checked unlock, latched), and the mark it left is settled', async () => {
    const hooks = newLock();
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    await grantBehindTheClientsBack(hooks, owner);
    const mark = unsettle(ctx, hooks.holdKey, performance.now() + LEASE);
    await lateGrants(hooks, ctx, owner, mark, LEASE, [BUSY, GRANTED]);
    expect(await env.redis.exists(hooks.key)).toBe(0);
    expect(hooks.unlocks).toEqual([expect.objectContaining({ owner, attempt: 1, guard: '' })]);
    expect(unsettled(ctx, hooks.holdKey)).toBeUndefined();
  });

  it('late answers that granted nothing undo nothing', async () => {
    const hooks = newLock();
    const ctx = newContext();
    expect(lateGrants(hooks, ctx, hooks.ownerOf(ctx), undefined, LEASE, [BUSY])).toBeUndefined();
    expect(hooks.unlocks).toEqual([]);
  });

  it('a late grant is kept when an armed attempt that adopts it was sent since the mark (the owner holds it then)', async () => {
    const hooks = newLock();
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    await grantBehindTheClientsBack(hooks, owner);
    const mark = unsettle(ctx, hooks.holdKey, performance.now() + LEASE);
    mark.tried = true;
    expect(lateGrants(hooks, ctx, owner, mark, LEASE, [GRANTED])).toBeUndefined();
    expect(hooks.unlocks).toEqual([]);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '1' });
    expect(unsettled(ctx, hooks.holdKey)).toBe(mark);
    await env.redis.del(hooks.key);
  });
});

describe('abandonOwner (protocol/undo.ts)', () => {
  it("a detached owner's lost grant is released in the background, and its mark dropped", async () => {
    const hooks = newLock();
    const ctx = detachedContext();
    const owner = hooks.ownerOf(ctx);
    await grantBehindTheClientsBack(hooks, owner);
    unsettle(ctx, hooks.holdKey, performance.now() + LEASE);
    abandonOwner(hooks, ctx);
    expect(unsettled(ctx, hooks.holdKey)).toBeUndefined();
    await waitUntil(async () => (await env.redis.exists(hooks.key)) === 0, 2000, 5, 'the lost grant released');
    expect(hooks.unlocks).toEqual([expect.objectContaining({ owner, guard: '' })]);
  });

  it('a context owner keeps its mark and the grant (its next acquisition adopts it); a detached owner without a mark sends nothing', async () => {
    const hooks = newLock();
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    await grantBehindTheClientsBack(hooks, owner);
    const mark = unsettle(ctx, hooks.holdKey, performance.now() + LEASE);
    abandonOwner(hooks, ctx);
    abandonOwner(hooks, detachedContext());
    expect(unsettled(ctx, hooks.holdKey)).toBe(mark);
    expect(hooks.unlocks).toEqual([]);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '1' });
    await env.redis.del(hooks.key);
  });
});

describe('undo (protocol/undo.ts)', () => {
  it('retried after its reply was lost (Redis unavailable to the call), it replays the first answer through one latch: one hold released of two', async () => {
    // No executor retries: the failure reaches undo's own loop.
    const { proxy, client } = await proxied({ retry: { retries: 0 } });
    const hooks = spy(client.getLock(`{${uniqueName('undo')}}`));
    const owner = `${client.id}:lost`;
    await grantBehindTheClientsBack(hooks, owner);
    expect((await hooks.runAcquire(owner, String(LEASE), '', '1')).granted).toBe(true);
    await env.redis.scriptLoad(UNLOCK.source);
    const cut = proxy.loseReply({ match: UNLOCK.sha });
    await undo(hooks, owner, performance.now() + 10_000);
    await cut;
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '1' });
    expect(hooks.unlocks.map((u) => u.attempt)).toEqual([1, 2]);
    expect(hooks.unlocks[1]!.latch).toBe(hooks.unlocks[0]!.latch);
    await env.redis.del(hooks.key);
  });
});
