import { describe, expect, it } from '@jest/globals';
import { sleep, uniqueName, waitUntil } from '../support/helpers.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';
import type { Topology } from './topology.js';

/**
 * Semaphores, latch, fenced, fair and read-write locks: what they add to the lock contract
 * (test/contract/), on every topology.
 */
export function familyCoreTests(topology: () => Topology): void {
  describe('semaphores and latch core', () => {
    it('semaphore: at most N inside; a waiter wakes through pub/sub when a permit is released', async () => {
      const { client, command } = topology();
      const c = client();
      // The waiter wakes by the release message within ms, against a bound of 300 ms (the file runs on 10
      // topologies, Cluster ones among them): a round that failed while this process's loop or the
      // semaphore's node stalled past 200 ms (stallTolerant; probeReplies PINGs the primary of its slot) is
      // repeated, up to 3 rounds, on a fresh name; without the message the waiter sleeps to the end of its
      // 10 s wait, every round.
      await stallTolerant(async (_, slowReply) => {
        const semaphore = c.getSemaphore(`sem:{${uniqueName()}}`);
        expect(await semaphore.trySetPermits(2)).toBe(true);
        expect(await semaphore.tryAcquire(2)).toBe(true);
        expect(await semaphore.tryAcquire()).toBe(false);
        const waiting = c.getSemaphore(semaphore.name).tryAcquire(1, 10, 'seconds');
        const stop = probeReplies({ ping: () => command(semaphore.name, ['PING']) }, slowReply);
        try {
          await sleep(50);
          await semaphore.release();
          const releasedAt = performance.now();
          expect(await waiting).toBe(true);
          const took = performance.now() - releasedAt;
          stop();
          expect(took).toBeLessThan(300);
          expect(await semaphore.availablePermits()).toBe(0);
        } finally {
          stop();
          await waiting.catch(() => false);
        }
      }, 200);
    });

    it('expirable semaphore: leased permits expire by server time and come back; release by id', async () => {
      const { client } = topology();
      const c = client();
      const semaphore = c.getPermitExpirableSemaphore(uniqueName());
      await semaphore.setPermits(2);
      const a = await semaphore.tryAcquire(0, 300, 'ms');
      const b = await semaphore.tryAcquire(0, 5, 'seconds');
      expect(a).toBeDefined();
      expect(b).toBeDefined();
      expect(await semaphore.tryAcquire()).toBeUndefined();
      expect(await semaphore.acquiredPermits()).toBe(2);
      const next = await c.getPermitExpirableSemaphore(semaphore.name).tryAcquire(3, 5, 'seconds');
      expect(next).toBeDefined();
      expect(await semaphore.tryRelease(a!)).toBe(false);
      await semaphore.release(b!);
      await semaphore.release(next!);
      expect(await semaphore.availablePermits()).toBe(2);
    });

    it('count-down latch: awaiters wake when the count reaches zero', async () => {
      const { client } = topology();
      const c = client();
      const latch = c.getCountDownLatch(uniqueName());
      expect(await latch.trySetCount(2)).toBe(true);
      const awaiters = [c.getCountDownLatch(latch.name).await(10, 'seconds'), client().getCountDownLatch(latch.name).await(10, 'seconds')];
      await sleep(50);
      expect(await latch.countDown()).toBe(1);
      expect(await latch.countDown()).toBe(0);
      expect(await Promise.all(awaiters)).toEqual([true, true]);
      expect(await latch.getCount()).toBe(0);
    });
  });

  describe('fenced, fair and read-write locks core', () => {
    it('fenced lock tokens increase across holders and expiry takeovers', async () => {
      const { client } = topology();
      const c = client();
      const name = uniqueName();
      const a = await c.getFencedLock(name).tryLockAndGetToken(0, 100, 'ms');
      const b = await c.getFencedLock(name).tryLockAndGetToken(2, 5, 'seconds');
      expect(a).toBe(1n);
      expect(b).toBe(2n);
      expect(await c.getFencedLock(name).getToken()).toBe(2n);
    });


    it('fair lock: waiters get the lock in arrival order', async () => {
      const { client } = topology();
      const c = client();
      const name = uniqueName();
      const holder = c.getFairLock(name);
      await holder.lock();
      const order: number[] = [];
      const waiters = [0, 1, 2].map(async (i) => {
        await sleep(60 * i);
        const lock = c.getFairLock(name);
        expect(await lock.tryLock(20, 'seconds')).toBe(true);
        order.push(i);
        await sleep(5);
        await lock.unlock();
      });
      await sleep(250);
      await holder.unlock();
      await Promise.all(waiters);
      expect(order).toEqual([0, 1, 2]);
    });

    it('read-write lock: readers share, a writer excludes them, and readers waiting on a writer get in together', async () => {
      const { client, command } = topology();
      const c = client();
      // The readers wake by the release message within ms, against a bound of 500 ms: a round that failed
      // while this process's loop or the lock's node stalled past 300 ms (stallTolerant with probeReplies)
      // is repeated, up to 3 rounds, on a fresh name, its holds released; without the message the readers
      // sleep on the write hold's 5 s lease, every round.
      await stallTolerant(async (_, slowReply) => {
        const name = uniqueName();
        const r1 = c.getReadWriteLock(name).readLock();
        const r2 = c.getReadWriteLock(name).readLock();
        expect(await r1.tryLock(0, 5, 'seconds')).toBe(true);
        expect(await r2.tryLock(0, 5, 'seconds')).toBe(true);
        const writer = c.getReadWriteLock(name).writeLock();
        expect(await writer.tryLock()).toBe(false);
        await r1.unlock();
        await r2.unlock();
        expect(await writer.tryLock(0, 5, 'seconds')).toBe(true);
        let writes = true;
        const readers = Array.from({ length: 4 }, () => c.getReadWriteLock(name).readLock());
        const acquiredAt: number[] = [];
        const waiting = readers.map((r) => r.tryLock(10, 5, 'seconds').then((ok) => (acquiredAt.push(performance.now()), ok)));
        const stop = probeReplies({ ping: () => command(name, ['PING']) }, slowReply);
        try {
          await sleep(100);
          await writer.unlock();
          writes = false;
          const unlockedAt = performance.now();
          expect(await Promise.all(waiting)).toEqual([true, true, true, true]);
          stop();
          expect(Math.max(...acquiredAt) - unlockedAt).toBeLessThan(500);
        } finally {
          stop();
          if (writes) await writer.unlock();
          const held = await Promise.all(waiting.map((w) => w.catch(() => false)));
          await Promise.all(readers.filter((_, i) => held[i]).map((r) => r.unlock()));
        }
        await waitUntil(async () => !(await writer.isLocked()), 2000, 10, 'the lock to be free');
      }, 300);
    });
  });
}
