import { describe, expect, it } from '@jest/globals';
import { IllegalMonitorStateError, runInContext, type LockLostEvent } from '../../src/index.js';
import { sleep, uniqueName, waitUntil } from '../support/helpers.js';
import type { Topology } from './topology.js';

/** RLock and FencedLock behaviour that must hold on every topology. */
export function lockCoreTests(topology: () => Topology): void {
  describe(`RLock core`, () => {
    it('reenters inside a context, resets the TTL, and refuses other owners', () => runInContext(async () => {
      const { client, redis } = topology();
      const c = client();
      const name = `lock:{${uniqueName()}}`;
      const lock = c.getLock(name);
      expect(await lock.tryLock(0, 5, 'seconds')).toBe(true);
      expect(await lock.tryLock(0, 8, 'seconds')).toBe(true);
      expect(await lock.getHoldCount()).toBe(2);
      expect(await redis.pTTL(lock.key)).toBeGreaterThan(7000);
      const other = client();
      expect(await other.getLock(name).tryLock()).toBe(false);
      await expect(other.getLock(name).unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
      await lock.unlock();
      await lock.unlock();
      expect(await redis.exists(lock.key)).toBe(0);
    }));

    it('30 concurrent tasks never overlap', async () => {
      const { client } = topology();
      const c = client();
      const name = uniqueName();
      let inside = 0;
      let max = 0;
      await Promise.all(
        Array.from({ length: 30 }, () =>
          c.withLock(name, async () => {
            max = Math.max(max, ++inside);
            await sleep(1);
            inside--;
          }),
        ),
      );
      expect(max).toBe(1);
    });

    it('a waiter wakes through pub/sub within milliseconds of the unlock, and leaves no subscription', async () => {
      const { client, subscribers } = topology();
      const holder = client().getLock(uniqueName());
      await holder.lock();
      const waiterClient = client();
      const waiting = waiterClient.getLock(holder.name).tryLock(10, 'seconds');
      await waitUntil(async () => (await subscribers(holder.channel)) === 1, 5000, 5, 'the waiter to subscribe');
      await holder.unlock();
      const unlockedAt = performance.now();
      expect(await waiting).toBe(true);
      expect(performance.now() - unlockedAt).toBeLessThan(300);
      await waitUntil(async () => (await subscribers(holder.channel)) === 0, 5000, 10, 'the unsubscribe');
      expect(waiterClient.stats().subscriptions).toBe(0);
    });

    it('the watchdog keeps a lock past 3 leases; a deleted lock is reported lost', async () => {
      const { client, redis } = topology();
      const c = client({ lockWatchdogTimeout: 600 });
      const lock = c.getLock(uniqueName());
      const handle = await lock.acquire();
      await sleep(1900);
      expect(await lock.isHeldByCurrentContext()).toBe(true);
      expect(await redis.exists(lock.key)).toBe(1);
      const lost = new Promise<LockLostEvent>((resolve) => c.once('lockLost', resolve));
      await redis.del(lock.key);
      expect((await lost).reason).toBe('expired');
      expect(handle.signal.aborted).toBe(true);
    });

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
  });
}
