/**
 * What a granted hold becomes for its caller (src/lock/protocol/handle.ts) through its own API, against a
 * real redis-server: `handleOf` (release, `extend`, `stopRefresh`, a signal that follows the watchdog or
 * the lease), `setLease` (the owner-checked `PEXPIRE` of the lock's renewal script), and `takeOver` of a
 * hold another process acquired under a caller-given identifier (`acquiredExternally`).
 */
import { describe, expect, it } from '@jest/globals';
import { detachedContext } from '../../../src/context.js';
import { LockLostError } from '../../../src/index.js';
import { acquire } from '../../../src/lock/protocol/acquire.js';
import { handleOf, setLease, takeOver } from '../../../src/lock/protocol/handle.js';
import { useRedis } from '../../support/harness.js';
import { lockClient, uniqueName, waitUntil } from '../../support/helpers.js';
import { holdCounts, newContext, spy, type Spied } from './engine.js';

const env = useRedis();

const newLock = (): Spied => spy(lockClient(env.redis).getLock(`{${uniqueName('handle')}}`));

describe('handleOf (protocol/handle.ts)', () => {
  it("a leased grant's handle: its signal follows the lease, extend() sets a new one in Redis, release() frees the key", async () => {
    const hooks = newLock();
    const ctx = newContext();
    const taken = await acquire(hooks, ctx, 0, 1000, undefined);
    const handle = handleOf(hooks, ctx, taken!.grant, 1000);
    expect(handle.owner).toBe(hooks.ownerOf(ctx));
    expect(handle.leaseTime).toBe(1000);
    await handle.extend(20, 'seconds');
    expect(await env.redis.pTTL(hooks.key)).toBeGreaterThan(15_000);
    // The first lease's end passes: the signal follows the new lease now.
    await waitUntil(() => performance.now() > taken!.grant.sentAt + 1200, 3000, 10, 'the first lease to pass');
    expect(handle.signal.aborted).toBe(false);
    await handle.release();
    expect(await env.redis.exists(hooks.key)).toBe(0);
    expect(ctx.holds.has(hooks.holdKey)).toBe(false);
  });

  it("a watchdog grant's handle: stopRefresh() ends the renewals and keeps the hold; release() then frees the key", async () => {
    const hooks = newLock();
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    const taken = await acquire(hooks, ctx, 0, undefined, undefined);
    const handle = handleOf(hooks, ctx, taken!.grant, undefined);
    expect(hooks.core.watchdog.renews(hooks.key, owner)).toBe(true);
    handle.stopRefresh();
    expect(hooks.core.watchdog.renews(hooks.key, owner)).toBe(false);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '1' });
    await handle.release();
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });
});

describe('setLease (protocol/handle.ts)', () => {
  it("sets the TTL when the owner holds the lock (its send time), and leaves another owner's lock alone (undefined)", async () => {
    const hooks = newLock();
    const ctx = newContext();
    await acquire(hooks, ctx, 0, 1000, undefined);
    const before = performance.now();
    const sentAt = await setLease(hooks, ctx, 20_000);
    expect(sentAt).toBeGreaterThanOrEqual(before);
    expect(await env.redis.pTTL(hooks.key)).toBeGreaterThan(15_000);
    expect(await setLease(hooks, newContext(), 60_000)).toBeUndefined();
    expect(await env.redis.pTTL(hooks.key)).toBeLessThanOrEqual(20_000);
    await env.redis.del(hooks.key);
  });
});

describe('takeOver (protocol/handle.ts)', () => {
  it("takes over another process's hold under a caller-given identifier: the watchdog's lease set and renewed, one hold recorded, released by its handle", async () => {
    const hooks = newLock();
    // The other process acquired it with a short lease under the identifier.
    const other = spy(lockClient(env.redis).getLock(hooks.name));
    expect((await other.runAcquire('job-42', '2000', '', '0')).granted).toBe(true);
    const ctx = detachedContext('job-42');
    const handle = await takeOver(hooks, ctx, undefined);
    expect(handle.owner).toBe('job-42');
    expect(await env.redis.pTTL(hooks.key)).toBeGreaterThan(hooks.core.watchdog.leaseMs - 5000);
    expect(hooks.core.watchdog.renews(hooks.key, 'job-42')).toBe(true);
    expect(ctx.holds.get(hooks.holdKey)?.count).toBe(1);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ 'job-42': '1' });
    await handle.release();
    expect(await env.redis.exists(hooks.key)).toBe(0);
    expect(hooks.core.watchdog.renews(hooks.key, 'job-42')).toBe(false);
  });

  it('with a lease: the lease is set, nothing renewed', async () => {
    const hooks = newLock();
    expect((await hooks.runAcquire('job-43', '60000', '', '0')).granted).toBe(true);
    const handle = await takeOver(hooks, detachedContext('job-43'), 5000);
    expect(handle.leaseTime).toBe(5000);
    expect(await env.redis.pTTL(hooks.key)).toBeLessThanOrEqual(5000);
    expect(hooks.core.watchdog.renews(hooks.key, 'job-43')).toBe(false);
    await handle.release();
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });

  it('an identifier that holds nothing is refused with LockLostError: nothing recorded, nothing renewed', async () => {
    const hooks = newLock();
    expect((await hooks.runAcquire('someone-else', '60000', '', '0')).granted).toBe(true);
    const ctx = detachedContext('job-44');
    await expect(takeOver(hooks, ctx, undefined)).rejects.toBeInstanceOf(LockLostError);
    expect(ctx.holds.has(hooks.holdKey)).toBe(false);
    expect(hooks.core.watchdog.renews(hooks.key, 'job-44')).toBe(false);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ 'someone-else': '1' });
    await env.redis.del(hooks.key);
  });
});
