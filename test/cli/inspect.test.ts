/**
 * `relock inspect` run as a child process (the sources through tsx) against a real Redis: every object
 * type is detected from its keys and shown with its holders, counts, TTLs, leases and deadlines.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { runInContext } from '../../src/index.js';
import { json, runCli, useCliHarness } from '../support/cli.js';
import { lockClient, numsub, uniqueName, waitUntil, type Redis } from '../support/helpers.js';
import { freePort, type RedisServer } from '../support/redis.js';

const harness = useCliHarness();
let server: RedisServer;
let redis: Redis;
beforeAll(() => {
  ({ server, redis } = harness);
});

/** `relock inspect <name> --json` against the test's Redis; the exit code must be 0. */
async function inspect(name: string, ...extra: string[]): Promise<Record<string, any>> {
  const result = await runCli(['inspect', name, '--json', '--url', server.url, ...extra]);
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return json(result);
}

describe('relock inspect', () => {
  it('shows a held lock: its owner with the hold count, the TTL and the channel', () => runInContext(async () => {
    const lock = lockClient(redis).getLock(uniqueName('inspect-lock'));
    const first = await lock.acquire();
    const second = await lock.acquire();
    expect(second.owner).toBe(first.owner);
    const d = await inspect(lock.name);
    expect(d).toMatchObject({
      name: lock.name,
      type: 'lock',
      key: lock.name,
      exists: true,
      holders: [{ owner: first.owner, holds: 2 }],
      channels: [{ channel: lock.channel, subscribers: 0 }],
      warnings: [],
    });
    expect(d.ttlMs).toBeGreaterThan(20_000);
    expect(d.ttlMs).toBeLessThanOrEqual(30_000);
    await second.release();
    await first.release();
  }));

  it('shows a non-reentrant lock (a plain string): its value as the holder, the TTL and the channel; force-unlock deletes it', async () => {
    const lock = lockClient(redis).getNonReentrantLock(uniqueName('inspect-nr'));
    const held = await lock.acquire({ leaseMs: 30_000 });
    const d = await inspect(lock.name);
    expect(d).toMatchObject({ name: lock.name, type: 'non-reentrant-lock', exists: true, holders: [{ owner: held.owner, holds: 1 }], channels: [{ channel: lock.channel, subscribers: 0 }], warnings: [] });
    expect(d.ttlMs).toBeGreaterThan(20_000);
    expect((await runCli(['force-unlock', lock.name, '--yes', '--url', server.url])).code).toBe(0);
    expect(await redis.exists(lock.key)).toBe(0);
  });

  it('warns about a lock without TTL, in JSON and on stderr in text mode', async () => {
    const lock = lockClient(redis).getLock(uniqueName('inspect-nottl'));
    const handle = await lock.acquire({ leaseMs: 60_000 });
    await redis.persist(lock.key);
    const d = await inspect(lock.name);
    expect(d).toMatchObject({ type: 'lock', exists: true, ttlMs: null, holders: [{ owner: handle.owner, holds: 1 }] });
    expect(d.warnings).toEqual([expect.stringContaining(`${lock.key} has no TTL`)]);
    const text = await runCli(['inspect', lock.name, '--url', server.url]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/TTL\s+no TTL/);
    expect(text.stderr).toMatch(/^warning: .* has no TTL.*never expires/m);
    await handle.release();
  });

  it('shows a fenced lock with its fencing counter, held and after release', () => runInContext(async () => {
    const lock = lockClient(redis).getFencedLock(uniqueName('inspect-fenced'));
    expect(await lock.tryLockAndGetToken(0, 20, 'seconds')).toBe(1n);
    expect(await lock.tryLockAndGetToken(0, 20, 'seconds')).toBe(2n);
    expect(await inspect(lock.name)).toMatchObject({ type: 'fenced-lock', exists: true, fencingToken: '2', holders: [{ holds: 2 }] });
    await lock.unlock();
    await lock.unlock();
    expect(await inspect(lock.name)).toMatchObject({ type: 'fenced-lock', exists: false, ttlMs: null, fencingToken: '2', holders: [] });
  }));

  it('shows a semaphore: its free permits and its waiters', async () => {
    const client = lockClient(redis);
    const semaphore = client.getSemaphore(uniqueName('inspect-sem'));
    await semaphore.trySetPermits(3);
    await semaphore.acquire(2);
    expect(await inspect(semaphore.name)).toMatchObject({ type: 'semaphore', exists: true, ttlMs: null, freePermits: 1, warnings: [] });
    await semaphore.acquire(1);
    const waiting = semaphore.acquire({ permits: 2, waitMs: 30_000 });
    await waitUntil(async () => (await numsub(redis, semaphore.channel)) === 1, 5000, 5, 'a waiter');
    expect(await inspect(semaphore.name)).toMatchObject({ type: 'semaphore', freePermits: 0, channels: [{ channel: semaphore.channel, subscribers: 1 }] });
    await semaphore.release(3);
    await waiting;
  });

  it('shows an expirable semaphore: permits taken and free, each lease from Redis server time', async () => {
    const semaphore = lockClient(redis).getPermitExpirableSemaphore(uniqueName('inspect-pes'));
    await semaphore.setPermits(4);
    const leased = await semaphore.acquire({ leaseMs: 10_000 });
    const pair = await semaphore.acquire({ permits: 2 });
    const d = await inspect(semaphore.name);
    expect(d).toMatchObject({ type: 'expirable-semaphore', exists: true, permits: { total: 4, taken: 3, free: 1, expiredNotReclaimed: 0 }, warnings: [] });
    expect(d.permits.leases.map((l: { id: string }) => l.id)).toEqual([...leased.ids, ...pair.ids]);
    for (const { id, remainingMs } of d.permits.leases as Array<{ id: string; remainingMs: number }>) {
      expect(remainingMs).toBe(Number(await redis.zScore(semaphore.key, id)) - d.serverTime);
    }
    expect(d.permits.leases[0].remainingMs).toBeLessThanOrEqual(10_000);
    expect(d.permits.leases[2].remainingMs).toBeGreaterThan(10_000);
    await leased.release();
    await pair.release();
    expect(await inspect(semaphore.name)).toMatchObject({ type: 'expirable-semaphore', exists: false, permits: { total: 4, taken: 0, free: 4 } });
  });

  it('shows a fair lock with waiters: the queue head first, each deadline and subscriber', async () => {
    const client = lockClient(redis, { fairLockWaitTimeout: 60_000 });
    const name = uniqueName('inspect-fair');
    const holder = await client.getFairLock(name).acquire();
    const lock = client.getFairLock(name);
    const waiters = [];
    for (let n = 1; n <= 2; n++) {
      waiters.push(runInContext(() => client.getFairLock(name).acquire({ waitMs: 30_000 })));
      await waitUntil(async () => (await redis.lLen(lock.queueKey)) === n, 5000, 5, `${n} queued`);
    }
    const queue = await redis.lRange(lock.queueKey, 0, -1);
    await waitUntil(async () => (await numsub(redis, lock.waiterChannel(queue[1]!))) === 1, 5000, 5, 'the second waiter to subscribe');
    const d = await inspect(name);
    expect(d).toMatchObject({
      type: 'fair-lock',
      holders: [{ owner: holder.owner, holds: 1 }],
      queue: queue.map((owner, i) => ({ owner, position: i + 1, channel: lock.waiterChannel(owner), subscribers: 1 })),
    });
    for (const waiter of d.queue as Array<{ deadlineInMs: number }>) {
      expect(waiter.deadlineInMs).toBeGreaterThan(40_000);
      expect(waiter.deadlineInMs).toBeLessThanOrEqual(60_000);
    }
    await holder.release();
    for (const waiter of waiters) await (await waiter).release();
  });

  it('shows a read-write lock in read mode: each reader with its holds and their leases', async () => {
    const rw = lockClient(redis).getReadWriteLock(uniqueName('inspect-rw'));
    const one = await runInContext(() => rw.readLock().acquire({ leaseMs: 10_000 }));
    const [two, again] = await runInContext(async () => [await rw.readLock().acquire(), await rw.readLock().acquire({ leaseMs: 5_000 })]);
    const d = await inspect(rw.name);
    expect(d).toMatchObject({ type: 'read-write-lock', mode: 'read', writer: null, warnings: [] });
    const readers = new Map((d.readers as Array<{ owner: string; holds: number; leasesMs: number[] }>).map((r) => [r.owner, r]));
    expect(readers.get(one.owner)).toMatchObject({ holds: 1, leasesMs: [expect.any(Number)] });
    expect(readers.get(two!.owner)).toMatchObject({ holds: 2 });
    const [watchdogLease, shortLease] = readers.get(two!.owner)!.leasesMs;
    expect(readers.get(one.owner)!.leasesMs[0]).toBeLessThanOrEqual(10_000);
    expect(watchdogLease).toBeGreaterThan(10_000);
    expect(shortLease).toBeLessThanOrEqual(5_000);
    expect(shortLease).toBeGreaterThan(0);
    // the key lives as long as its longest hold (both read in one script; renewals may land a few ms apart)
    expect(Math.abs((d.ttlMs as number) - watchdogLease!)).toBeLessThan(100);
    await again!.release();
    await two!.release();
    await one.release();
  });

  it('shows a read-write lock in write mode with the writer', async () => {
    const rw = lockClient(redis).getReadWriteLock(uniqueName('inspect-rw'));
    const write = await rw.writeLock().acquire({ leaseMs: 20_000 });
    const d = await inspect(rw.name);
    expect(d).toMatchObject({ type: 'read-write-lock', mode: 'write', readers: [], writer: { owner: write.owner.replace(/:write$/, ''), holds: 1 } });
    await write.release();
  });

  it('shows a count-down latch: its count and its awaiters', async () => {
    const latch = lockClient(redis).getCountDownLatch(uniqueName('inspect-latch'));
    await latch.trySetCount(3);
    await latch.countDown();
    expect(await inspect(latch.name)).toMatchObject({ type: 'count-down-latch', count: 2, ttlMs: null, warnings: [] });
    expect(await inspect(latch.name, '--type', 'latch')).toMatchObject({ type: 'count-down-latch', count: 2 });
    const awaiting = latch.await(30, 'seconds');
    await waitUntil(async () => (await numsub(redis, latch.channel)) === 1, 5000, 5, 'an awaiter');
    expect(await inspect(latch.name)).toMatchObject({ type: 'count-down-latch', count: 2, channels: [{ channel: latch.channel, subscribers: 1 }] });
    await latch.countDown();
    await latch.countDown();
    expect(await awaiting).toBe(true);
  });

  it('finds objects under --prefix', async () => {
    const lock = lockClient(redis, { keyPrefix: 'app7:' }).getLock(uniqueName('inspect-prefixed'));
    const handle = await lock.acquire({ leaseMs: 20_000 });
    expect(await inspect(lock.name, '--prefix', 'app7:')).toMatchObject({ type: 'lock', key: `app7:${lock.name}`, holders: [{ owner: handle.owner }] });
    expect((await runCli(['inspect', lock.name, '--url', server.url])).code).toBe(3);
    await handle.release();
  });

  it('says so, with exit code 3, for a name with no relock object or with other data', async () => {
    const missing = uniqueName('inspect-missing');
    const text = await runCli(['inspect', missing, '--url', server.url]);
    expect(text).toMatchObject({ code: 3, stdout: '' });
    expect(text.stderr).toMatch(new RegExp(`^relock: no relock object "${missing}"`));
    expect(text.stderr.trim().split('\n')).toHaveLength(1);
    const asJson = await runCli(['inspect', missing, '--json', '--url', server.url]);
    expect(asJson.code).toBe(3);
    expect(json(asJson)).toMatchObject({ name: missing, found: false });
    const list = uniqueName('inspect-list');
    await redis.rPush(list, 'x');
    const foreign = await runCli(['inspect', list, '--url', server.url]);
    expect(foreign.code).toBe(3);
    expect(foreign.stderr).toContain('is not a relock object');
    expect(foreign.stderr).toContain('is a Redis list');
  });

  it('reports bad usage with exit code 2 and an unreachable Redis with exit code 1, in one line naming the URL', async () => {
    const usage = await runCli(['inspect', 'x', '--limit', 'lots', '--url', server.url]);
    expect(usage.code).toBe(2);
    const url = `redis://127.0.0.1:${await freePort()}`;
    const down = await runCli(['inspect', 'x'], { env: { REDIS_URL: url } });
    expect(down.code).toBe(1);
    expect(down.stdout).toBe('');
    expect(down.stderr).toMatch(new RegExp(`^relock: cannot connect to Redis at ${url.replace(/[.]/g, '\\.')}: .*ECONNREFUSED.*REDIS_URL.*--url`));
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    const notCluster = await runCli(['inspect', 'x', '--cluster', '--url', server.url]);
    expect(notCluster.code).toBe(1);
    expect(notCluster.stderr).toMatch(/is not a Redis Cluster node \(.*cluster support disabled\); drop --cluster/);
  });
});
