/**
 * The acquisition protocol (src/lock/protocol/acquire.ts) through its own API: `acquire(lock, ctx, …)`
 * for an owner given explicitly, against a real redis-server. A first grant, a reentrant grant, a refused
 * attempt handing the holder's TTL to the lock's wait, a hold that ended without the client knowing (also
 * when the owner's record calls its renewed hold leased), a lost reply resolved by the guard (a TCP proxy
 * drops the reply), the adoption of an earlier call's lost grant, and a grant that came after its caller
 * aborted, undone before the call rejects.
 */
import { describe, expect, it } from '@jest/globals';
import { currentContext } from '../../../src/context.js';
import type { LockLostError } from '../../../src/errors.js';
import type { RLock } from '../../../src/lock/lock.js';
import { acquire } from '../../../src/lock/protocol/acquire.js';
import type { Grant, Refused, Waiter } from '../../../src/lock/protocol/hooks.js';
import { unsettle, unsettled } from '../../../src/lock/protocol/marks.js';
import { unlock } from '../../../src/lock/protocol/unlock.js';
import { ACQUIRE } from '../../../src/lock/scripts.js';
import { useRedis } from '../../support/harness.js';
import { lockClient, uniqueName } from '../../support/helpers.js';
import { gate, holdCounts, newContext, NIL, spy, useProxied } from './engine.js';

const env = useRedis();
const proxied = useProxied(env);

const newLock = (): RLock => lockClient(env.redis).getLock(`{${uniqueName('acquire')}}`);

describe('acquire (protocol/acquire.ts)', () => {
  it('a first grant: one attempt, one hold in Redis and in the owner, renewed by the watchdog', async () => {
    const hooks = spy(newLock());
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    const taken = await acquire(hooks, ctx, 0, undefined, undefined);
    expect(taken?.ctx).toBe(ctx);
    expect(taken!.grant.sentAt).toBeGreaterThan(0);
    expect(hooks.acquires).toEqual([{ owner, guard: '', held: '0' }]);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '1' });
    expect(ctx.holds.get(hooks.holdKey)?.count).toBe(1);
    expect(hooks.core.watchdog.renews(hooks.key, owner)).toBe(true);
    await unlock(hooks, ctx);
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });

  it('a reentrant grant: the attempt sends the count it knows, Redis and the owner count 2, and the TTL is raised to the longer lease', async () => {
    const hooks = spy(newLock());
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    await acquire(hooks, ctx, 0, 1000, undefined);
    await acquire(hooks, ctx, 0, 20_000, undefined);
    expect(hooks.acquires.map((a) => a.held)).toEqual(['0', '1']);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '2' });
    expect(ctx.holds.get(hooks.holdKey)?.count).toBe(2);
    expect(await env.redis.pTTL(hooks.key)).toBeGreaterThan(10_000);
    await unlock(hooks, ctx);
    await unlock(hooks, ctx);
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });

  it("a refused attempt hands the holder's TTL to the lock's wait; the waiter records nothing and its watchdog registration is dropped", async () => {
    const hooks = spy(newLock());
    const holder = newContext();
    await acquire(hooks, holder, 0, 30_000, undefined);
    const seen: Refused[] = [];
    const waiting = Object.assign(Object.create(hooks) as typeof hooks, {
      waitAfter: (_waiter: Waiter, first: Refused): Promise<Grant | undefined> => {
        seen.push(first);
        return Promise.resolve(undefined); // the wait ran out
      },
    });
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    expect(await acquire(waiting, ctx, 5000, undefined, undefined)).toBeUndefined();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.acquired).toBe(false);
    expect(seen[0]!.retryAfterMs).toBeGreaterThan(20_000);
    expect(seen[0]!.retryAfterMs).toBeLessThanOrEqual(30_000);
    expect(ctx.holds.has(hooks.holdKey)).toBe(false);
    expect(hooks.core.watchdog.renews(hooks.key, owner)).toBe(false);
    // Without a wait time the refused call ends at once, without the wait.
    expect(await acquire(waiting, ctx, 0, undefined, undefined)).toBeUndefined();
    expect(seen).toHaveLength(1);
    await unlock(hooks, holder);
  });

  it("a hold that ended without the client knowing: Redis answers 'lost', the hold is forgotten and reported lost, and the same call is granted one hold", async () => {
    const client = lockClient(env.redis);
    const hooks = spy(client.getLock(`{${uniqueName('acquire')}}`));
    const lost: string[] = [];
    client.on('lockLost', (e) => lost.push(e.reason));
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    await acquire(hooks, ctx, 0, undefined, undefined);
    await env.redis.del(hooks.key);
    expect(await acquire(hooks, ctx, 0, undefined, undefined)).toBeDefined();
    expect(hooks.acquires.map((a) => a.held)).toEqual(['0', '1', '0']);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '1' });
    expect(ctx.holds.get(hooks.holdKey)?.count).toBe(1);
    expect(lost).toEqual(['expired']);
    await unlock(hooks, ctx);
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });

  it("a hold that ended while the owner's record calls every hold leased (a leased handle released after unlock() had given its hold back takes a renewed hold's flag): the watchdog's hold is still reported lost", async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(`{${uniqueName('acquire')}}`);
    const lost: string[] = [];
    client.on('lockLost', (e) => lost.push(e.reason));
    await client.runInContext(async () => {
      const ctx = currentContext()!;
      const owner = lock.ownerOf(ctx);
      const flags = (): unknown => ctx.holds.get(lock.holdKey)?.renewed;
      const first = await lock.acquire();
      const renewed = await lock.acquire();
      const leased = await lock.acquire({ leaseMs: 30_000 });
      await lock.unlock(); // the innermost hold: the leased one's count
      await leased.release(); // no leased hold left: it takes a renewed one's flag
      const leasedToo = await lock.acquire({ leaseMs: 30_000 });
      await first.release();
      // One hold in Redis, recorded as leased; the watchdog renews one (the second handle's).
      expect(await holdCounts(env.redis, lock.key)).toEqual({ [owner]: '1' });
      expect(flags()).toEqual([false]);
      expect(lock.core.watchdog.renews(lock.key, owner)).toBe(true);
      await env.redis.del(lock.key);
      expect(await lock.tryLock()).toBe(true); // answered 'lost', then granted one hold
      expect(lost).toEqual(['expired']);
      expect(renewed.signal.aborted).toBe(true);
      expect((renewed.signal.reason as LockLostError).reason).toBe('expired');
      expect(leasedToo.signal.aborted).toBe(false); // a lease is watched by its own end
      expect(await holdCounts(env.redis, lock.key)).toEqual({ [owner]: '1' });
      expect(flags()).toBe(true);
      await lock.unlock();
    });
    expect(await env.redis.exists(lock.key)).toBe(0);
  });

  it('a lost reply is resolved by the guard: the retry, armed with the count before, recognises its own grant (one hold, not two) and settles the lock', async () => {
    const { proxy, client } = await proxied();
    const hooks = spy(client.getLock(`{${uniqueName('acquire')}}`));
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    await env.redis.scriptLoad(ACQUIRE.source);
    const cut = proxy.loseReply({ match: ACQUIRE.sha, replyPrefix: NIL });
    // A wait time, so that the executor may retry (a single attempt, wait 0, has no time for one).
    expect(await acquire(hooks, ctx, 3000, undefined, undefined)).toBeDefined();
    await cut;
    expect(proxy.repliesLost).toBe(1);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '1' });
    expect(hooks.acquires.map((a) => a.guard)).toEqual(['', '0']);
    expect(ctx.holds.get(hooks.holdKey)?.count).toBe(1);
    expect(unsettled(ctx, hooks.holdKey)).toBeUndefined();
    await unlock(hooks, ctx);
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });

  it("an owner left unsettled by an earlier call's lost reply adopts that grant: the first attempt is armed, and the count stays 1", async () => {
    const hooks = spy(newLock());
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    // The earlier call's attempt went through, its reply lost: Redis holds the grant, the owner does not know.
    expect((await hooks.runAcquire(owner, '30000', '', '0')).granted).toBe(true);
    unsettle(ctx, hooks.holdKey, performance.now() + 30_000);
    hooks.acquires.length = 0;
    expect(await acquire(hooks, ctx, 0, undefined, undefined)).toBeDefined();
    expect(hooks.acquires).toEqual([{ owner, guard: '0', held: '0' }]);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '1' });
    expect(unsettled(ctx, hooks.holdKey)).toBeUndefined();
    await unlock(hooks, ctx);
    expect(await env.redis.exists(hooks.key)).toBe(0);
  });

  it('a grant that comes after its caller aborted is undone before the call rejects (no hold left, nothing recorded)', async () => {
    const hooks = spy(newLock());
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    hooks.holdAcquire = gate();
    const controller = new AbortController();
    const call = acquire(hooks, ctx, 5000, undefined, controller.signal);
    await hooks.acquireEntered.opened;
    const reason = new Error('caller gave up');
    controller.abort(reason);
    hooks.holdAcquire.open(); // the attempt now runs in Redis and is granted, after the call gave up
    await expect(call).rejects.toBe(reason);
    expect(await env.redis.exists(hooks.key)).toBe(0);
    expect(hooks.unlocks).toHaveLength(1);
    expect(hooks.unlocks[0]).toMatchObject({ owner, guard: '' });
    expect(ctx.holds.has(hooks.holdKey)).toBe(false);
    expect(hooks.core.watchdog.renews(hooks.key, owner)).toBe(false);
  });
});

