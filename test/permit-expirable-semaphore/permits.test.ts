import { describe, expect, it } from '@jest/globals';
import { InvalidArgumentError, LockLostError, PermitNotHeldError, WrongTypeError, type LockLostEvent } from '../../src/index.js';
import { keySlot } from '../../src/keys.js';
import { useRedis } from '../support/harness.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';
import { commandCalls, lockClient, serverTime, sleep, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis({ server: { controllable: true } });

describe('RPermitExpirableSemaphore', () => {
  it('stores permits in a sorted set scored by Redis server time + lease, the limit in a string, all keys in one slot', async () => {
    const client = lockClient(env.redis);
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(2);
    const before = await serverTime(env.redis);
    const id = await semaphore.tryAcquire(0, 5, 'seconds');
    const after = await serverTime(env.redis);
    expect(id).toMatch(new RegExp(`^${client.id}-`));
    expect(await env.redis.type(semaphore.key)).toBe('zset');
    const score = (await env.redis.zScore(semaphore.key, id!))!;
    expect(score).toBeGreaterThanOrEqual(before + 5000);
    expect(score).toBeLessThanOrEqual(after + 5000);
    const pttl = await env.redis.pTTL(semaphore.key);
    expect(pttl).toBeGreaterThan(4000);
    expect(pttl).toBeLessThanOrEqual(5000);
    expect(await env.redis.get(semaphore.permitsKey)).toBe('2');
    const slots = new Set([semaphore.key, semaphore.permitsKey, semaphore.channel].map(keySlot));
    expect(slots.size).toBe(1);
    expect(semaphore.channel).toBe(`relock:channel:{${semaphore.name}}:permits`);
    await semaphore.release(id!);
    expect(await env.redis.exists(semaphore.key)).toBe(0);
  });

  it('limit 2, five concurrent acquirers: exactly two get a permit, three are refused', async () => {
    const clients = [lockClient(env.redis), lockClient(env.redis)];
    const name = uniqueName();
    await clients[0]!.getPermitExpirableSemaphore(name).setPermits(2);
    const ids = await Promise.all(Array.from({ length: 5 }, (_, i) => clients[i % 2]!.getPermitExpirableSemaphore(name).tryAcquire(0, 10, 'seconds')));
    expect(ids.filter(Boolean)).toHaveLength(2);
    const semaphore = clients[0]!.getPermitExpirableSemaphore(name);
    expect(await semaphore.acquiredPermits()).toBe(2);
    expect(await semaphore.availablePermits()).toBe(0);
    await semaphore.release(ids.find(Boolean)!);
    expect(await env.redis.zCard(semaphore.key)).toBe(1);
    expect(await semaphore.availablePermits()).toBe(1);
  });

  it('setPermits, trySetPermits, addPermits and the counts; a missing limit means no permits', async () => {
    const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(uniqueName());
    expect(await semaphore.getPermits()).toBe(0);
    expect(await semaphore.tryAcquire()).toBeUndefined();
    expect(await semaphore.trySetPermits(3)).toBe(true);
    expect(await semaphore.trySetPermits(5)).toBe(false);
    const a = (await semaphore.tryAcquire())!;
    const b = (await semaphore.tryAcquire())!;
    expect([await semaphore.getPermits(), await semaphore.acquiredPermits(), await semaphore.availablePermits()]).toEqual([3, 2, 1]);
    await semaphore.setPermits(1);
    expect(await semaphore.availablePermits()).toBe(-1);
    expect(await semaphore.tryAcquire()).toBeUndefined();
    await semaphore.addPermits(2);
    expect(await semaphore.availablePermits()).toBe(1);
    await semaphore.addPermits(-1);
    expect(await semaphore.getPermits()).toBe(2);
    await semaphore.release([a, b]);
    expect(await semaphore.availablePermits()).toBe(2);
    for (const ttl of [0, -5]) await expect(semaphore.trySetPermits(4, ttl, 's')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', argument: 'timeToLive' });
    expect(await semaphore.getPermits()).toBe(2);
  });

  it('releasing an unknown or expired id: tryRelease gives false, release a PermitNotHeldError, at once (known failure 1)', async () => {
    const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(2);
    expect(await semaphore.tryRelease('no-such-permit')).toBe(false);
    const error = await semaphore.release('no-such-permit').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermitNotHeldError);
    expect((error as PermitNotHeldError).ids).toEqual(['no-such-permit']);
    expect((error as PermitNotHeldError).code).toBe('PERMIT_NOT_HELD');
    expect((error as Error).message).toContain(semaphore.name);

    // The two refusals are one round trip each (two EVALSHAs, counted), against a bound of 100 ms: a round
    // that failed while this process's loop or Redis stalled past 80 ms (stallTolerant with probeReplies)
    // is repeated, up to 3 rounds, on a fresh semaphore; a release that waited or retried before its
    // refusal is late (or sends more calls) every round.
    await stallTolerant(async (_, slowReply) => {
      const expirable = lockClient(env.redis).getPermitExpirableSemaphore(uniqueName());
      await expirable.setPermits(2);
      const expiring = (await expirable.tryAcquire(0, 100, 'ms'))!;
      await sleep(150);
      const stop = probeReplies(env.redis, slowReply);
      try {
        const before = await commandCalls(env.redis, 'evalsha');
        const started = performance.now();
        expect(await expirable.tryRelease(expiring)).toBe(false);
        await expect(expirable.release(expiring)).rejects.toBeInstanceOf(PermitNotHeldError);
        const took = performance.now() - started;
        stop();
        expect({ tookMs: took < 100 ? '< 100' : Math.round(took), calls: (await commandCalls(env.redis, 'evalsha')) - before }).toEqual({ tookMs: '< 100', calls: 2 });
        expect(await expirable.availablePermits()).toBe(2);
      } finally {
        stop();
      }
    }, 80);
  });

  it('releasing a list is all or nothing: one id not held leaves every other permit held', async () => {
    const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(3);
    const ids = (await semaphore.tryAcquire(2, 0, 10, 'seconds'))!;
    expect(ids).toHaveLength(2);
    expect(await semaphore.tryRelease([ids[0]!, 'bogus', ids[1]!])).toBe(false);
    const error = (await semaphore.release([...ids, 'bogus']).catch((e: unknown) => e)) as PermitNotHeldError;
    expect(error).toBeInstanceOf(PermitNotHeldError);
    expect(error.ids).toEqual(['bogus']);
    expect(await semaphore.acquiredPermits()).toBe(2);
    await semaphore.release(ids);
    expect(await semaphore.acquiredPermits()).toBe(0);
  });

  it('10,000 permits acquired and released in one call, with a lease and with the watchdog (known failure 17)', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 3000 });
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(10_000);
    const ids = (await semaphore.tryAcquire(10_000, 0, 30, 'seconds'))!;
    expect(ids).toHaveLength(10_000);
    expect(new Set(ids).size).toBe(10_000);
    expect(await env.redis.zCard(semaphore.key)).toBe(10_000);
    expect(await semaphore.tryAcquire()).toBeUndefined();
    await semaphore.release(ids);
    expect(await env.redis.exists(semaphore.key)).toBe(0);

    const handle = await semaphore.acquire({ permits: 10_000 });
    expect(client.stats().watchdogHolds).toBe(10_000);
    expect(await semaphore.acquiredPermits()).toBe(10_000);
    await handle.release();
    expect(client.stats().watchdogHolds).toBe(0);
    expect(await semaphore.availablePermits()).toBe(10_000);
  });

  it('a permit without a lease is renewed by the watchdog past 3× lockWatchdogTimeout, and not after its release', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 600 });
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(1);
    const id = (await semaphore.tryAcquire())!;
    await sleep(2000);
    expect(await env.redis.zScore(semaphore.key, id)).toBeGreaterThan(await serverTime(env.redis));
    expect(await semaphore.availablePermits()).toBe(0);
    expect(client.stats().renewalCalls).toBeGreaterThanOrEqual(5);
    await semaphore.release(id);
    const calls = client.stats().renewalCalls;
    const evalsha = await commandCalls(env.redis, 'evalsha');
    await sleep(700);
    expect(client.stats().renewalCalls).toBe(calls);
    expect(await commandCalls(env.redis, 'evalsha')).toBe(evalsha);
    expect(client.stats().watchdogHolds).toBe(0);
  });

  it('a permit with a lease is not renewed and expires on its own; the handle signal aborts at the lease end', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 300 });
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(1);
    const handle = await semaphore.acquire({ leaseMs: 400 });
    expect(handle.leaseTime).toBe(400);
    expect(client.stats().watchdogHolds).toBe(0);
    await waitUntil(() => handle.signal.aborted, 2000, 10, 'the lease to end');
    expect(handle.signal.reason).toBeInstanceOf(LockLostError);
    // The signal counts the lease from the send time, so it fires at or just before the server's expiry.
    await waitUntil(async () => (await semaphore.availablePermits()) === 1, 300, 5, 'the permit to expire in Redis');
    expect(client.stats().renewalCalls).toBe(0);
    await expect(handle.release()).rejects.toBeInstanceOf(PermitNotHeldError);
  });

  it('a watchdog permit removed behind the holder\'s back surfaces as lockLost and an aborted handle signal', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 600 });
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(2);
    const handle = await semaphore.acquire({ permits: 2 });
    const lost = new Promise<LockLostEvent>((resolve) => client.once('lockLost', resolve));
    await env.redis.zRem(semaphore.key, handle.ids[1]!);
    const event = await lost;
    expect(event).toMatchObject({ name: semaphore.name, key: semaphore.key, owner: handle.ids[1], reason: 'expired' });
    expect(handle.signal.aborted).toBe(true);
    expect(client.stats().watchdogHolds).toBe(1);
    await expect(handle.release()).rejects.toBeInstanceOf(PermitNotHeldError);
  });

  it('shutdown() while a permit release is on its way reports the permits still renewed as lost (shutdown), not the one being released', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 600 });
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(2);
    const kept = await semaphore.acquire();
    const released = await semaphore.acquire();
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    const releasing = released.release().catch((e: unknown) => e);
    await client.shutdown();
    await releasing;
    expect(lost.map((event) => [event.owner, event.reason])).toEqual([[kept.id, 'shutdown']]);
    expect(released.signal.aborted).toBe(false);
  });

  it('releases racing with renewals never report a permit lost', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 300 });
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(4);
    const lost: LockLostEvent[] = [];
    client.on('lockLost', (event) => lost.push(event));
    const deadline = performance.now() + 2000;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (performance.now() < deadline) {
          const handle = await semaphore.acquire();
          await sleep(Math.random() * 150);
          await handle.release();
        }
      }),
    );
    expect(client.stats().renewalCalls).toBeGreaterThan(5);
    expect(lost).toEqual([]);
  });

  it('a refused list release keeps the watchdog renewing the permits that are still held', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 400 });
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(1);
    const handle = await semaphore.acquire();
    expect(await semaphore.tryRelease([handle.id, 'bogus'])).toBe(false);
    await sleep(1200);
    expect(handle.signal.aborted).toBe(false);
    expect(await semaphore.acquiredPermits()).toBe(1);
    await handle.release();
  });

  it('updateLeaseTime moves the expiry (server time) of held permits and ends their watchdog renewal; false for unknown ids', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 3000 });
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(2);
    const id = (await semaphore.tryAcquire())!;
    expect(client.stats().watchdogHolds).toBe(1);
    const before = await serverTime(env.redis);
    expect(await semaphore.updateLeaseTime(id, 60, 'seconds')).toBe(true);
    expect(client.stats().watchdogHolds).toBe(0);
    expect((await env.redis.zScore(semaphore.key, id))! - before).toBeGreaterThanOrEqual(60_000);
    expect(await env.redis.pTTL(semaphore.key)).toBeGreaterThan(59_000);
    expect(await semaphore.updateLeaseTime([id, 'bogus'], 1, 'seconds')).toBe(false);
    expect((await env.redis.zScore(semaphore.key, id))! - before).toBeGreaterThanOrEqual(60_000);

    const handle = await semaphore.acquire();
    await handle.updateLeaseTime(300, 'ms');
    expect(handle.leaseTime).toBe(300);
    await waitUntil(() => handle.signal.aborted, 2000, 10, 'the new lease to end');
    await waitUntil(async () => (await semaphore.acquiredPermits()) === 1, 300, 5, 'the permit to expire in Redis');
    await expect(handle.updateLeaseTime(1, 's')).rejects.toBeInstanceOf(PermitNotHeldError);
  });

  it('await using releases the permits at the end of the block', async () => {
    const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(3);
    {
      await using handle = await semaphore.acquire({ permits: 2, leaseTime: 10, unit: 's' });
      expect(handle.ids).toHaveLength(2);
      expect(await semaphore.availablePermits()).toBe(1);
    }
    expect(await semaphore.availablePermits()).toBe(3);
  });

  it('a release whose reply is lost is retried without failing or releasing twice (request latch)', async () => {
    const client = lockClient(env.redis, { responseTimeout: 150, retry: { minTimeout: 50, maxTimeout: 200, retries: 6 } });
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(2);
    const [a, b] = (await semaphore.tryAcquire(2, 0, 30, 'seconds'))!;
    const calls = await commandCalls(env.redis, 'evalsha');
    env.server.pause();
    let releasing: Promise<void>;
    try {
      releasing = semaphore.release(a!);
      await sleep(400);
    } finally {
      env.server.resume();
    }
    await releasing;
    expect(await commandCalls(env.redis, 'evalsha')).toBeGreaterThanOrEqual(calls + 2);
    expect(await env.redis.zRange(semaphore.key, 0, -1)).toEqual([b]);
  });

  it('a key that holds other data fails with WrongTypeError; bad arguments with InvalidArgumentError before anything is sent', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await env.redis.set(name, 'application data');
    const error = await client.getPermitExpirableSemaphore(name).tryAcquire(1, 's').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WrongTypeError);
    expect((error as WrongTypeError).actualType).toBe('string');

    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    const before = await commandCalls(env.redis, 'evalsha');
    await expect(semaphore.acquire({ permits: 0 })).rejects.toThrow(InvalidArgumentError);
    await expect(semaphore.acquire({ permits: 1.5 })).rejects.toThrow(/permits/);
    await expect(semaphore.tryAcquire(1, 0, 's')).rejects.toThrow(/leaseTime/);
    await expect(semaphore.tryAcquire(1, 5 as unknown as 's')).rejects.toThrow(/unit/);
    await expect(semaphore.release([])).rejects.toThrow(/ids/);
    await expect(semaphore.release(['a', 'a'])).rejects.toThrow(/twice/);
    await expect(semaphore.updateLeaseTime('a', -1, 's')).rejects.toThrow(/leaseTime/);
    await expect(semaphore.setPermits(-1)).rejects.toThrow(/permits/);
    expect(() => client.getPermitExpirableSemaphore('a{}b')).toThrow(/hash tag/);
    expect(await commandCalls(env.redis, 'evalsha')).toBe(before);
  });
});
