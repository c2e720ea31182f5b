import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { IllegalMonitorStateError, InvalidArgumentError, LockAcquireTimeoutError, LockLostError, RedisUnavailableError, ReentryNeedsContextError, runInContext, type RLock } from '../../src/index.js';
import { activeTimers, closeAll, commandCalls, connect, lockClient, numsub, sleep, uniqueName, waitUntil, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';

let serverA: RedisServer;
let serverB: RedisServer;
let redisA: Redis;
let redisB: Redis;

beforeAll(async () => {
  [serverA, serverB] = await Promise.all([startRedis({ controllable: true }), startRedis({ controllable: true })]);
  [redisA, redisB] = await Promise.all([connect(serverA.url), connect(serverB.url)]);
});
afterEach(closeAll);
afterAll(async () => {
  await Promise.all([redisA.close(), redisB.close()]);
  await Promise.all([serverA.stop(), serverB.stop()]);
});

/** The lock hash (owner → hold count) of `lock` on `redis`. */
/** A member's holders → hold counts (its hash without the `kind` field). */
const hashOf = async (redis: Redis, lock: RLock): Promise<Record<string, string>> => {
  const { kind: _kind, ...holders } = (await redis.hGetAll(lock.key)) as Record<string, string>;
  return holders;
};

describe('MultiLock', () => {
  it('locks members on two Redis servers all together, reenters, and unlock releases all', () => runInContext(async () => {
    const a = lockClient(redisA);
    const b = lockClient(redisB);
    const name = uniqueName();
    const multi = a.getMultiLock(a.getLock(`${name}:1`), b.getLock(`${name}:2`), a.getSpinLock(`${name}:3`));
    expect(multi.name).toBe(`[${name}:1, ${name}:2, ${name}:3]`);
    await multi.lock();
    expect(Object.values(await hashOf(redisA, multi.locks[0]!))).toEqual(['1']);
    expect(Object.values(await hashOf(redisB, multi.locks[1]!))).toEqual(['1']);
    expect(Object.values(await hashOf(redisA, multi.locks[2]!))).toEqual(['1']);
    expect(await multi.isHeldByCurrentContext()).toBe(true);
    expect(await multi.tryLock()).toBe(true);
    expect(Object.values(await hashOf(redisB, multi.locks[1]!))).toEqual(['2']);
    await multi.unlock();
    await multi.unlock();
    for (const [redis, lock] of [[redisA, multi.locks[0]!], [redisB, multi.locks[1]!], [redisA, multi.locks[2]!]] as const) {
      expect(await redis.exists(lock.key)).toBe(0);
    }
    await expect(multi.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    expect(a.stats().watchdogHolds + b.stats().watchdogHolds).toBe(0);
  }));

  it('outside a context, the same object locked twice by one task without an unlock: ReentryNeedsContextError, the first hold stays and unlock() is refused', async () => {
    // As an RLock (test/shared/ownership-core.ts): a contextless reentry cannot tell the task from another
    // one, so it is refused instead of waiting on the task's own hold.
    const a = lockClient(redisA);
    const b = lockClient(redisB);
    const [memberA, memberB] = [a.getLock(uniqueName('multi-reentry')), b.getLock(uniqueName('multi-reentry'))];
    const multi = a.getMultiLock(memberA, memberB);
    await multi.lock();
    try {
      await expect(multi.tryLock(2, 'seconds')).rejects.toBeInstanceOf(ReentryNeedsContextError);
      await expect(multi.lock()).rejects.toBeInstanceOf(ReentryNeedsContextError);
      expect([Object.values(await hashOf(redisA, memberA)), Object.values(await hashOf(redisB, memberB))]).toEqual([['1'], ['1']]);
      // The refusal is noted as an acquisition that got nothing (the hold it saw may be a sibling task's),
      // so this task's unlock() releases nothing.
      await expect(multi.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
      expect([await redisA.exists(memberA.key), await redisB.exists(memberB.key)]).toEqual([1, 1]);
    } finally {
      await Promise.all([memberA.forceUnlock(), memberB.forceUnlock()]);
    }
  });

  it('never sits on a partial set while waiting: while one member is held elsewhere, the caller holds none of the others', async () => {
    const mine = lockClient(redisA);
    const mineB = lockClient(redisB);
    const other = lockClient(redisB);
    const name = uniqueName();
    const blocker = other.getLock(`${name}:2`);
    await blocker.lock();
    const multi = mine.getMultiLock(mine.getLock(`${name}:1`), mineB.getLock(`${name}:2`), mine.getLock(`${name}:3`));
    let acquiredAt = 0;
    const waiting = multi.tryLock(10, 'seconds').then((ok) => ((acquiredAt = performance.now()), ok));
    await waitUntil(async () => (await numsub(redisB, blocker.channel)) === 1, 3000, 2, 'the caller to wait on the busy member');
    const samples: number[] = [];
    const until = performance.now() + 400;
    while (performance.now() < until) {
      samples.push((await redisA.exists(multi.locks[0]!.key)) + (await redisA.exists(multi.locks[2]!.key)));
      await sleep(2);
    }
    expect(samples.length).toBeGreaterThan(20);
    expect(samples.every((held) => held === 0)).toBe(true);
    await blocker.unlock();
    const releasedAt = performance.now();
    expect(await waiting).toBe(true);
    expect(acquiredAt - releasedAt).toBeLessThan(1000); // woken by pub/sub, not the 30 s TTL timer
    expect(await multi.isHeldByCurrentContext()).toBe(true);
    await multi.unlock();
  });

  it('tryLock() with a busy member makes one attempt per member up to it and holds nothing afterwards', async () => {
    const client = lockClient(redisA);
    const name = uniqueName();
    await client.getLock(`${name}:2`).lock();
    const multi = client.getMultiLock(client.getLock(`${name}:1`), client.getLock(`${name}:2`), client.getLock(`${name}:3`));
    const before = await commandCalls(redisA, 'evalsha');
    expect(await multi.tryLock()).toBe(false);
    expect(await multi.tryLock(0, 5, 'seconds')).toBe(false);
    // per call: acquire 1, acquire 2 (busy), release 1
    expect((await commandCalls(redisA, 'evalsha')) - before).toBe(6);
    expect(await redisA.exists(multi.locks[0]!.key)).toBe(0);
    expect(await redisA.exists(multi.locks[2]!.key)).toBe(0);
    // The wait ends at its 200 ms, against a bound of 1,000 ms: a round that failed while this process's
    // loop or Redis stalled past 400 ms (stallTolerant with probeReplies) is repeated, up to 3 rounds, on
    // fresh names, the busy member released; a wait that sleeps past its time left fails every round.
    await stallTolerant(async (_, slowReply) => {
      const fresh = uniqueName();
      const busy = client.getLock(`${fresh}:2`);
      await busy.lock();
      const waiting = client.getMultiLock(client.getLock(`${fresh}:1`), client.getLock(`${fresh}:2`), client.getLock(`${fresh}:3`));
      const stop = probeReplies(redisA, slowReply);
      try {
        const started = performance.now();
        await expect(waiting.acquire({ waitMs: 200 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
        const took = performance.now() - started;
        stop();
        expect(took).toBeLessThan(1000);
        expect(await redisA.exists(waiting.locks[0]!.key)).toBe(0);
      } finally {
        stop();
        await busy.forceUnlock();
      }
    }, 400);
  });

  it('two callers with overlapping sets in opposite order both finish, and never hold the shared members together (known failure 21)', async () => {
    const clientsA = [lockClient(redisA), lockClient(redisB)];
    const clientsB = [lockClient(redisA), lockClient(redisB)];
    const name = uniqueName();
    const setOf = (clients: typeof clientsA, order: number[]): ReturnType<(typeof clientsA)[0]['getMultiLock']> =>
      clients[0]!.getMultiLock(...order.map((i) => clients[i % 2]!.getLock(`${name}:${i}`)));
    const rounds = 100;
    let inside = 0;
    let overlaps = 0;
    const run = async (order: number[], clients: typeof clientsA, lease: boolean): Promise<number> => {
      const multi = setOf(clients, order);
      const started = performance.now();
      for (let i = 0; i < rounds; i++) {
        if (lease) expect(await multi.tryLock(10, 5, 'seconds')).toBe(true);
        else await multi.lock();
        if (++inside > 1) overlaps++;
        await new Promise((resolve) => setImmediate(resolve));
        inside--;
        await multi.unlock();
      }
      return performance.now() - started;
    };
    const [msA, msB] = await Promise.all([run([0, 1, 2, 3], clientsA, false), run([3, 2, 1, 0], clientsB, false)]);
    expect(overlaps).toBe(0);
    const [leaseA, leaseB] = await Promise.all([run([0, 1, 2], clientsA, true), run([2, 1, 0], clientsB, true)]);
    expect(overlaps).toBe(0);
    expect(Math.max(msA, msB, leaseA, leaseB)).toBeLessThan(20_000);
  }, 60_000);

  it('with a lease, members are taken longer while acquiring and all set to the lease at the end', async () => {
    const client = lockClient(redisA);
    const clientB = lockClient(redisB);
    const name = uniqueName();
    await client.getLock(`${name}:2`).tryLock(0, 300, 'ms');
    const multi = client.getMultiLock(client.getLock(`${name}:1`), client.getLock(`${name}:2`), clientB.getLock(`${name}:3`));
    expect(await multi.tryLock(3000, 500, 'ms')).toBe(true);
    const ttls = [await redisA.pTTL(multi.locks[0]!.key), await redisA.pTTL(multi.locks[1]!.key), await redisB.pTTL(multi.locks[2]!.key)];
    for (const ttl of ttls) {
      expect(ttl).toBeGreaterThan(300);
      expect(ttl).toBeLessThanOrEqual(500);
    }
    expect(client.stats().watchdogHolds + clientB.stats().watchdogHolds).toBe(0);
    await waitUntil(async () => (await redisA.exists(multi.locks[0]!.key)) + (await redisB.exists(multi.locks[2]!.key)) === 0, 2000, 10, 'the lease to end');
  });

  it('acquire() returns a handle: release() from another context releases all, its signal aborts when a member is lost', async () => {
    const a = lockClient(redisA, { lockWatchdogTimeout: 600 });
    const b = lockClient(redisB, { lockWatchdogTimeout: 600 });
    const name = uniqueName();
    const multi = a.getMultiLock(a.getLock(`${name}:1`), b.getLock(`${name}:2`));
    const handle = await runInContext(() => multi.acquire({ waitMs: 1000 }));
    expect(handle.leaseTime).toBeUndefined();
    expect(handle.owner.split(',')).toHaveLength(2);
    await sleep(700);
    expect(handle.signal.aborted).toBe(false);
    await redisB.del(multi.locks[1]!.key);
    await waitUntil(() => handle.signal.aborted, 2000, 10, 'the loss to be noticed');
    expect(handle.signal.reason).toBeInstanceOf(LockLostError);
    await expect(handle.release()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    expect(await redisA.exists(multi.locks[0]!.key)).toBe(0);

    const leased = await multi.acquire({ leaseMs: 300 });
    expect(leased.leaseTime).toBe(300);
    await waitUntil(() => leased.signal.aborted, 2000, 10, 'the lease to end');
    expect((leased.signal.reason as LockLostError).reason).toBe('lease-ended');
  });

  it('a member whose reply was lost is released once the reply shows it was granted', async () => {
    const a = lockClient(redisA);
    const b = lockClient(redisB, { responseTimeout: 200 });
    const name = uniqueName();
    const multi = a.getMultiLock(a.getLock(`${name}:1`), b.getLock(`${name}:2`));
    serverB.pause();
    let error: unknown;
    try {
      error = await multi.tryLock().catch((e: unknown) => e);
      expect(await redisA.exists(multi.locks[0]!.key)).toBe(0);
    } finally {
      serverB.resume();
    }
    expect(error).toBeInstanceOf(RedisUnavailableError);
    await waitUntil(async () => (await redisB.exists(multi.locks[1]!.key)) === 0, 3000, 10, 'the late grant to be undone');
    expect(b.stats().watchdogHolds).toBe(0);
  });

  it('waits for an unreachable member within the wait time, then acquires when it is back', async () => {
    const a = lockClient(redisA);
    const b = lockClient(redisB, { responseTimeout: 300 });
    const name = uniqueName();
    const multi = a.getMultiLock(a.getLock(`${name}:1`), b.getLock(`${name}:2`));
    serverB.pause();
    const waiting = multi.tryLock(5, 'seconds');
    try {
      await sleep(500);
      expect(await redisA.exists(multi.locks[0]!.key)).toBe(0);
    } finally {
      serverB.resume();
    }
    expect(await waiting).toBe(true);
    await multi.unlock();
  });

  it('aborting a waiting acquire rejects with the reason and leaves nothing held, subscribed or timed', async () => {
    const client = lockClient(redisA);
    const name = uniqueName();
    await client.getLock(`${name}:2`).lock();
    const timers = activeTimers();
    const multi = client.getMultiLock(client.getLock(`${name}:1`), client.getLock(`${name}:2`));
    const controller = new AbortController();
    const waiting = multi.acquire({ signal: controller.signal });
    await waitUntil(async () => (await numsub(redisA, multi.locks[1]!.channel)) === 1, 3000, 2, 'the wait');
    controller.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    expect(await redisA.exists(multi.locks[0]!.key)).toBe(0);
    await waitUntil(() => client.stats().subscriptions === 0, 2000, 5, 'the unsubscribe');
    await waitUntil(() => activeTimers() <= timers, 1000, 10, 'timers to be cleared');
    expect(client.stats().watchdogHolds).toBe(1);
  });

  it('rejects bad members and times with InvalidArgumentError', async () => {
    const a = lockClient(redisA);
    const b = lockClient(redisB);
    expect(() => a.getMultiLock()).toThrow(InvalidArgumentError);
    expect(() => a.getMultiLock(a.getLock('x'), {} as RLock)).toThrow(/locks\[1\]/);
    expect(() => a.getMultiLock(a.getLock('x'), a.getSpinLock('x'))).toThrow(/given twice/);
    expect(a.getMultiLock(a.getLock('x'), b.getLock('x')).locks).toHaveLength(2);
    await expect(a.getMultiLock(a.getLock('x')).tryLock(1, 'parsecs' as never)).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
