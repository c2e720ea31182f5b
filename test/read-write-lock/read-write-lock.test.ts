import { beforeAll, describe, expect, it } from '@jest/globals';
import { IllegalMonitorStateError, InvalidArgumentError, LockUpgradeError, runInContext, type LockLostEvent } from '../../src/index.js';
import { activeTimers, commandCalls, contextRunner, keys, lockClient, numsub, sleep, uniqueName, waitUntil, type Redis } from '../support/helpers.js';
import { leavesNothingBehind, useFamilyHarness } from '../support/family.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';
import { expectWokenByMessage, recordAcquisitions } from '../support/wakes.js';

const harness = useFamilyHarness();
let redis: Redis;
beforeAll(() => {
  redis = harness.redis;
});

const noKeysLeft = (name: string): Promise<unknown> => waitUntil(async () => (await keys(redis, `*${name}*`)).length === 0, 2000, 10, `no keys of ${name} left`);

describe('RReadWriteLock basics', () => {
  it('readers share, a writer excludes readers and writers, both are reentrant', async () => {
    const a = lockClient(redis);
    const b = lockClient(redis);
    const name = uniqueName('rw');
    // readA and write are reentrant owners (a context each); readB and writeB are used outside any context.
    const [inA, inW] = [contextRunner(), contextRunner()];
    const readA = a.getReadWriteLock(name).readLock();
    const readB = b.getReadWriteLock(name).readLock();
    const writeB = b.getReadWriteLock(name).writeLock();
    expect(await inA(() => readA.tryLock(0, 5, 's'))).toBe(true);
    expect(await inA(() => readA.tryLock())).toBe(true);
    expect(await readB.tryLock()).toBe(true);
    expect(await inA(() => readA.getHoldCount())).toBe(2);
    expect(await readB.getHoldCount()).toBe(1);
    expect(await readA.isLocked()).toBe(true);
    expect(await writeB.isLocked()).toBe(false);
    expect(await writeB.tryLock(100, 'ms')).toBe(false);
    await inA(() => readA.unlock());
    await inA(() => readA.unlock());
    expect(await writeB.tryLock()).toBe(false);
    await readB.unlock();
    expect(await redis.exists(readA.key)).toBe(0);

    const write = a.getReadWriteLock(name).writeLock();
    expect(await inW(() => write.tryLock())).toBe(true);
    expect(await inW(() => write.tryLock())).toBe(true);
    expect(await inW(() => write.getHoldCount())).toBe(2);
    expect(await inW(() => write.isHeldByCurrentContext())).toBe(true);
    expect(await write.isLocked()).toBe(true);
    expect(await readA.isLocked()).toBe(false);
    expect(await readB.tryLock()).toBe(false);
    expect(await writeB.tryLock()).toBe(false);
    expect(await redis.hGet(write.key, 'mode')).toBe('write');
    await inW(() => write.unlock());
    expect(await readB.tryLock()).toBe(false);
    await inW(() => write.unlock());
    expect(await readB.tryLock()).toBe(true);
    await readB.unlock();
    await noKeysLeft(name);
  });

  it('unlock by a non-owner throws IllegalMonitorStateError and leaves the holds alone', async () => {
    const client = lockClient(redis);
    const name = uniqueName('rw');
    const rw = client.getReadWriteLock(name);
    await rw.readLock().lock();
    const other = client.getReadWriteLock(name);
    await expect(other.readLock().unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    await expect(rw.writeLock().unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    expect(await rw.readLock().getHoldCount()).toBe(1);
    await rw.readLock().unlock();
    await other.writeLock().lock();
    const error = await rw.writeLock().unlock().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IllegalMonitorStateError);
    expect((error as Error).message).toContain(name);
    await expect(rw.readLock().unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    expect(await other.writeLock().isHeldByCurrentContext()).toBe(true);
    await other.writeLock().unlock();
  });

  it('forceUnlock deletes the lock only in its own mode and wakes every waiter', async () => {
    const client = lockClient(redis);
    const name = uniqueName('rw');
    const rw = client.getReadWriteLock(name);
    await rw.writeLock().lock();
    expect(await rw.readLock().forceUnlock()).toBe(false);
    expect(client.stats().watchdogHolds).toBe(1);
    const readers = Array.from({ length: 3 }, () => client.getReadWriteLock(name).readLock().tryLock(5, 'seconds'));
    await waitUntil(async () => (await numsub(redis, rw.readLock().channel)) === 1, 2000, 2, 'the readers to subscribe');
    expect(await client.getReadWriteLock(name).writeLock().forceUnlock()).toBe(true);
    expect(await Promise.all(readers)).toEqual([true, true, true]);
    expect(await rw.writeLock().forceUnlock()).toBe(false);
    expect(client.stats().watchdogHolds).toBe(3);
    expect(await rw.readLock().forceUnlock()).toBe(true);
    expect(client.stats().watchdogHolds).toBe(0);
    await noKeysLeft(name);
  });

  it('read → write upgrade throws LockUpgradeError at the first attempt, writing nothing; write → read downgrade is allowed', () => runInContext(async () => {
    const client = lockClient(redis);
    const rw = client.getReadWriteLock(uniqueName('rw'));
    await rw.readLock().lock();
    const hash = await redis.hGetAll(rw.readLock().key);
    const before = await commandCalls(redis, 'evalsha');
    const error = await rw.writeLock().tryLock(1, 'seconds').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockUpgradeError);
    await expect(rw.writeLock().lock()).rejects.toBeInstanceOf(LockUpgradeError);
    // Decided by the acquire script from the read holds in Redis: one call each, no retry, nothing written.
    expect(await commandCalls(redis, 'evalsha')).toBe(before + 2);
    expect(await redis.hGetAll(rw.readLock().key)).toEqual(hash);
    await rw.readLock().unlock();
    expect(await rw.writeLock().tryLock()).toBe(true);
    expect(await rw.readLock().tryLock()).toBe(true);
    await rw.readLock().unlock();
    await rw.writeLock().unlock();
  }));

  it('rejects bad names and times with InvalidArgumentError', async () => {
    const client = lockClient(redis);
    expect(() => client.getReadWriteLock('')).toThrow(InvalidArgumentError);
    expect(() => client.getReadWriteLock('a{}b')).toThrow(/hash tag/);
    const rw = client.getReadWriteLock(uniqueName('rw'));
    await expect(rw.readLock().tryLock(1, 0, 's')).rejects.toThrow(/leaseTime/);
    await expect(rw.writeLock().tryLock(-3, 'fortnights' as 's')).rejects.toThrow(InvalidArgumentError);
    expect(rw.getName()).toBe(rw.readLock().getName());
  });

  it('the owner follows contexts: a task that holds the write lock takes the read lock in a nested context (downgrade)', async () => {
    const client = lockClient(redis);
    const name = uniqueName('rw');
    await runInContext(async () => {
      const rw = client.getReadWriteLock(name);
      await rw.writeLock().lock();
      await runInContext(async () => {
        expect(await client.getReadWriteLock(name).readLock().tryLock(0, 5, 's')).toBe(true);
      });
      await rw.writeLock().unlock();
      expect(await client.getReadWriteLock(name).readLock().isHeldByCurrentContext()).toBe(true);
      // Sibling tasks are other owners: readers share with the downgraded owner.
      await Promise.all([0, 1].map(() => runInContext(async () => {
        const read = client.getReadWriteLock(name).readLock();
        expect(await read.tryLock()).toBe(true);
        await read.unlock();
      })));
      await client.getReadWriteLock(name).readLock().unlock();
    });
    await noKeysLeft(name);
  });
});

describe('RReadWriteLock leases and the watchdog', () => {
  it('write → read → unlock(write) leaves the read held and renewed for three watchdog periods', () => runInContext(async () => {
    const client = lockClient(redis, { lockWatchdogTimeout: 600 });
    const other = lockClient(redis);
    const name = uniqueName('rw');
    const rw = client.getReadWriteLock(name);
    let lost = false;
    client.on('lockLost', () => (lost = true));
    await rw.writeLock().lock();
    const read = await rw.readLock().acquire();
    await rw.writeLock().unlock();
    expect(await redis.hGet(rw.key, 'mode')).toBe('read');
    expect(await rw.readLock().isHeldByCurrentContext()).toBe(true);
    expect(await rw.writeLock().isHeldByCurrentContext()).toBe(false);
    await sleep(1900);
    expect(lost).toBe(false);
    expect(read.signal.aborted).toBe(false);
    expect(await rw.readLock().isHeldByCurrentContext()).toBe(true);
    expect(await rw.readLock().remainTimeToLive()).toBeGreaterThan(300);
    expect(await other.getReadWriteLock(name).writeLock().tryLock()).toBe(false);
    const otherRead = other.getReadWriteLock(name).readLock();
    expect(await otherRead.tryLock()).toBe(true);
    await otherRead.unlock();
    await read.release();
    expect(client.stats().watchdogHolds).toBe(0);
    await noKeysLeft(name);
  }));

  it('an inner shorter lease does not shorten an outer hold (read and write)', () => runInContext(async () => {
    const client = lockClient(redis);
    for (const side of ['read', 'write'] as const) {
      const rw = client.getReadWriteLock(uniqueName('rw'));
      const lock = side === 'read' ? rw.readLock() : rw.writeLock();
      expect(await lock.tryLock(0, 3000, 'ms')).toBe(true);
      expect(await lock.tryLock(0, 100, 'ms')).toBe(true);
      expect(await lock.remainTimeToLive()).toBeGreaterThan(2500);
      await sleep(300);
      expect(await lock.isHeldByCurrentContext()).toBe(true);
      expect(await lock.remainTimeToLive()).toBeGreaterThan(2000);
      // The inner hold's lease ended: releasing it is still fine while the outer hold lives.
      await lock.unlock();
      expect(await lock.getHoldCount()).toBe(1);
      expect(await lock.remainTimeToLive()).toBeGreaterThan(2000);
      await lock.unlock();
      expect(await lock.isLocked()).toBe(false);
    }
  }));

  it('each read hold has its own lease: a lapsed reader does not keep a writer out once the others leave', async () => {
    const a = lockClient(redis);
    const b = lockClient(redis);
    const name = uniqueName('rw');
    const shortRead = a.getReadWriteLock(name).readLock();
    expect(await shortRead.tryLock(0, 300, 'ms')).toBe(true);
    const longRead = b.getReadWriteLock(name).readLock();
    await longRead.lock();
    const writer = a.getReadWriteLock(name).writeLock();
    let writtenAt = 0;
    const acquisitions = recordAcquisitions();
    const writing = writer.tryLock(10, 'seconds').then((ok) => ((writtenAt = performance.now()), ok)).finally(() => acquisitions.stop());
    await sleep(600);
    expect(writtenAt).toBe(0);
    // Its lease over, the short reader no longer holds the lock (while another reader keeps the key alive).
    await expect(shortRead.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    const releasedAt = performance.now();
    await longRead.unlock();
    expect(await writing).toBe(true);
    expectWokenByMessage(acquisitions, name, writtenAt - releasedAt);
    await writer.unlock();
  });

  it('a reader\'s unlock keeps the lock alive for the longest remaining lease: no writer gets in while a longer-lease reader holds (issue 28)', async () => {
    // Readers A (10 s), C (600 ms) and B (300 ms), each of its own client. B's unlock must set the TTL
    // from the longest lease left (A's), not from the shortest (C's) nor from its own.
    const name = uniqueName('rw');
    const [a, b, c] = [lockClient(redis), lockClient(redis), lockClient(redis)];
    const longRead = a.getReadWriteLock(name).readLock();
    expect(await longRead.tryLock(0, 10_000, 'ms')).toBe(true);
    const aSent = performance.now();
    expect(await c.getReadWriteLock(name).readLock().tryLock(0, 600, 'ms')).toBe(true);
    const shortRead = b.getReadWriteLock(name).readLock();
    expect(await shortRead.tryLock(0, 300, 'ms')).toBe(true);
    await shortRead.unlock();
    const aLeft = 10_000 - (performance.now() - aSent);
    expect(Number(await redis.pTTL(name))).toBeGreaterThanOrEqual(aLeft - 50);
    expect(Number(await redis.pTTL(longRead.leasesKey))).toBeGreaterThanOrEqual(aLeft - 50);
    // Past C's lease a writer still finds A reading.
    const writer = lockClient(redis).getReadWriteLock(name).writeLock();
    expect(await writer.tryLock(1500, 'ms')).toBe(false);
    expect(await longRead.isLocked()).toBe(true);
    expect(Number(await redis.pTTL(name))).toBeGreaterThan(10_000 - (performance.now() - aSent) - 50);
    await longRead.unlock();
    expect(await writer.tryLock(0, 'ms')).toBe(true);
    await writer.unlock();
  });

  it('several readers holding the read lock for three watchdog periods all stay valid and unlock cleanly (known failure 24)', async () => {
    const clients = [lockClient(redis, { lockWatchdogTimeout: 600 }), lockClient(redis, { lockWatchdogTimeout: 600 })];
    const name = uniqueName('rw');
    const lost: LockLostEvent[] = [];
    for (const c of clients) c.on('lockLost', (e) => lost.push(e));
    const handles = await Promise.all(Array.from({ length: 6 }, (_, i) => runInContext(() => clients[i % 2]!.getReadWriteLock(name).readLock().acquire())));
    await sleep(1900);
    expect(lost).toEqual([]);
    expect(handles.every((h) => !h.signal.aborted)).toBe(true);
    const fields = await redis.hGetAll(handles[0]!.name);
    expect(Object.keys(fields)).toHaveLength(7);
    expect(Number(await redis.pTTL(handles[0]!.name))).toBeGreaterThan(200);
    await Promise.all(handles.map((h) => h.release()));
    expect(clients.every((c) => c.stats().watchdogHolds === 0)).toBe(true);
    await noKeysLeft(name);
  });

  it('a hold lost behind the client\'s back is reported by the renewal, which does not revive it, and then forgotten', async () => {
    const client = lockClient(redis, { lockWatchdogTimeout: 600 });
    const other = lockClient(redis);
    const name = uniqueName('rw');
    const handle = await client.getReadWriteLock(name).readLock().acquire();
    const keepAlive = other.getReadWriteLock(name).readLock();
    await keepAlive.lock();
    // Only this client's hold ends (its lease entry is removed); the other reader keeps the key alive.
    const leases = (await keys(redis, `*leases*${name}*`))[0]!;
    const [own] = (await redis.zRange(leases, 0, -1)).filter((m) => m.startsWith(handle.owner));
    await redis.zAdd(leases, { score: 0, value: own! });
    const lost = await new Promise<LockLostEvent>((resolve) => client.once('lockLost', resolve));
    expect(lost.reason).toBe('expired');
    expect(handle.signal.aborted).toBe(true);
    expect(await redis.zScore(leases, own!)).toBe(0);
    // The next unlock by anyone forgets holds whose lease ended, and owners left without a hold (here a hold
    // of its own, in a context: a contextless re-acquire by the task that holds is refused).
    await other.runInContext(async () => {
      await keepAlive.lock();
      await keepAlive.unlock();
    });
    expect(await redis.zScore(leases, own!)).toBeNull();
    expect(Number(await redis.hExists(handle.name, handle.owner))).toBe(0);
    await expect(handle.release()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    expect(await keepAlive.isHeldByCurrentContext()).toBe(true);
    await keepAlive.unlock();
    await noKeysLeft(name);
  });
});

describe('RReadWriteLock waking', () => {
  it('readers waiting on a writer all acquire together within milliseconds of its release', async () => {
    const clients = [lockClient(redis), lockClient(redis), lockClient(redis)];
    const name = uniqueName('rw');
    const writer = clients[0]!.getReadWriteLock(name).writeLock();
    const spreads: number[] = [];
    const latencies: number[] = [];
    for (let round = 0; round < 5; round++) {
      await writer.lock();
      const acquiredAt: number[] = [];
      const readers = Array.from({ length: 15 }, (_, i) => {
        const read = clients[i % 3]!.getReadWriteLock(name).readLock();
        return read.tryLock(10, 'seconds').then((ok) => {
          acquiredAt.push(performance.now());
          return { ok, read };
        });
      });
      await waitUntil(async () => (await numsub(redis, writer.channel)) === 3, 2000, 2, 'three subscriptions');
      await sleep(20);
      const unlockedAt = performance.now();
      await writer.unlock();
      const results = await Promise.all(readers);
      expect(results.every((r) => r.ok)).toBe(true);
      spreads.push(Math.max(...acquiredAt) - Math.min(...acquiredAt));
      latencies.push(Math.max(...acquiredAt) - unlockedAt);
      await Promise.all(results.map((r) => r.read.unlock()));
    }
    spreads.sort((x, y) => x - y);
    latencies.sort((x, y) => x - y);
    process.stdout.write(`rw: 15 readers after a write unlock, spread median ${spreads[2]!.toFixed(1)} ms, last reader in after median ${latencies[2]!.toFixed(1)} ms (max ${latencies[4]!.toFixed(1)})\n`);
    expect(spreads[2]!).toBeLessThan(100);
    expect(latencies[2]!).toBeLessThan(150);
  });

  it('a downgrade lets waiting readers in at once; the last reader\'s release lets a writer in', async () => {
    const a = lockClient(redis);
    const b = lockClient(redis);
    // Both hand-offs are a message's round trip, against a bound of 200 ms: a round that failed while this
    // process's loop or Redis stalled past 150 ms (stallTolerant with probeReplies) is repeated, up to 3
    // rounds, on a fresh name, with every hold it took released; a downgrade or release that publishes
    // nothing leaves the waiter on the write hold's 30 s TTL, to the end of its 10 s wait, every round.
    await stallTolerant(async (_, slowReply) => {
      const name = uniqueName('rw');
      const rw = a.getReadWriteLock(name);
      const inA = contextRunner(); // the downgrading owner
      await inA(() => rw.writeLock().lock());
      let aWrites = true;
      let aReads = false;
      const reader = b.getReadWriteLock(name).readLock();
      const reading = reader.tryLock(10, 'seconds');
      const writer = b.getReadWriteLock(name).writeLock();
      const writing = writer.tryLock(10, 'seconds');
      let readerHolds: boolean | undefined; // undefined: not known yet
      const stop = probeReplies(redis, slowReply);
      try {
        await waitUntil(async () => (await numsub(redis, reader.channel)) === 1, 2000, 2, 'the waiters to subscribe');
        await inA(() => rw.readLock().lock());
        aReads = true;
        let started = performance.now();
        await inA(() => rw.writeLock().unlock());
        aWrites = false;
        expect(await reading).toBe(true);
        readerHolds = true;
        let took = performance.now() - started;
        expect(took).toBeLessThan(200);
        await reader.unlock();
        readerHolds = false;
        started = performance.now();
        await inA(() => rw.readLock().unlock());
        aReads = false;
        expect(await writing).toBe(true);
        took = performance.now() - started;
        stop();
        expect(took).toBeLessThan(200);
      } finally {
        stop();
        // A failed round releases whatever it still holds (and lets the waiters end) before the next.
        if (aWrites) await inA(() => rw.writeLock().unlock());
        if (aReads) await inA(() => rw.readLock().unlock());
        readerHolds ??= await reading.catch(() => false);
        if (readerHolds) await reader.unlock();
        if (await writing.catch(() => false)) await writer.unlock();
      }
    }, 150);
  });

  it('aborted and timed-out waits leave no subscription, timer or renewal behind', async () => {
    const client = lockClient(redis);
    const name = uniqueName('rw');
    const writer = client.getReadWriteLock(name).writeLock();
    await writer.lock();
    const timers = activeTimers();
    const controller = new AbortController();
    const waiting = client.getReadWriteLock(name).readLock().acquire({ signal: controller.signal });
    expect(await client.getReadWriteLock(name).readLock().tryLock(100, 'ms')).toBe(false);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    await waitUntil(async () => (await numsub(redis, writer.channel)) === 0, 2000, 5, 'the unsubscribe');
    expect(client.stats().subscriptions).toBe(0);
    expect(client.stats().watchdogHolds).toBe(1);
    await waitUntil(() => activeTimers() <= timers, 1000, 10, 'timers to be cleared');
    await writer.unlock();
    expect(client.stats().watchdogHolds).toBe(0);
    await noKeysLeft(name);
  });
});

leavesNothingBehind(harness, 'rw');
