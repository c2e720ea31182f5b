/**
 * What every supported client family must deliver on every topology (issue 11's acceptance): reentry,
 * exclusion, a waiter woken by the unlock message (not by the lease running out), the watchdog, and an
 * unlock that leaves neither key nor subscription. Run by test/clients/ (one file per family and
 * topology) and, for node-redis, by test/contract/locks.test.ts and test/cluster/contract.test.ts.
 */
import { describe, expect, it } from '@jest/globals';
import { runInContext } from '../../src/index.js';
import type { Topology } from '../shared/topology.js';
import { sleep, uniqueName, waitUntil } from '../support/helpers.js';
import { stallTolerant } from '../support/stalls.js';
import { MESSAGE_WAKE_MS } from '../support/wakes.js';

/** A name with a hash tag: its key and channel are in one slot. */
const newName = (): string => `client:{${uniqueName()}}`;

/** Registers the acceptance tests of the topology's client family. */
export function clientAcceptanceTests(topology: () => Topology): void {
  describe('client acceptance', () => {
    it('reentry in one context reaches hold count 2; a second owner is refused meanwhile', async () => {
      const t = topology();
      const name = newName();
      const lock = t.client().getLock(name);
      await runInContext(async () => {
        await lock.lock(10, 'seconds');
        await lock.lock(10, 'seconds');
        expect(await lock.getHoldCount()).toBe(2);
        expect(await t.client().getLock(name).tryLock(0, 10, 'seconds')).toBe(false);
        await lock.unlock();
        await lock.unlock();
      });
      expect(await t.redis.exists(lock.key)).toBe(0);
    });

    it('a waiter is woken by the unlock message, far within the 10 s lease; the unlock leaves no key and no subscription', async () => {
      const t = topology();
      const name = newName();
      const holder = t.client().getLock(name);
      const handle = await holder.acquire({ leaseTime: 10, unit: 'seconds' });
      const waiter = t.client().getLock(name);
      const waiting = waiter.acquire({ waitTime: 20, leaseTime: 10, unit: 'seconds' });
      waiting.catch(() => {});
      await waitUntil(async () => (await t.subscribers(waiter.channel)) === 1, 5000, 5, 'the waiter to subscribe');
      const start = performance.now();
      await handle.release();
      const got = await waiting;
      const handOffMs = performance.now() - start;
      // A wake-up by the lease running out would take 10 s; by the message it takes a round trip or two
      // (a few ms alone; CI's whole-suite run once took 254 ms for one: MESSAGE_WAKE_MS leaves room for it).
      expect(handOffMs).toBeLessThan(MESSAGE_WAKE_MS);
      await got.release();
      expect(await t.redis.exists(holder.key)).toBe(0);
      await waitUntil(async () => (await t.subscribers(waiter.channel)) === 0, 5000, 10, 'the subscription to go');
    });

    it('the watchdog keeps a lock past 3x a short lockWatchdogTimeout', async () => {
      const t = topology();
      // A 750 ms lease renewed every 250 ms keeps through a stall of about 480 ms (600 ms: about 390 ms, less
      // than CI's worst); a round that lost the hold while the loop stalled past the budget is repeated.
      // Without renewals the hold ends at 750 ms in every round.
      const client = t.client({ lockWatchdogTimeout: 750 });
      await stallTolerant(async () => {
        const lock = client.getLock(newName());
        const handle = await lock.acquire();
        try {
          await sleep(3 * 750 + 300);
          expect(handle.signal.aborted).toBe(false);
          expect(await t.redis.pTTL(lock.key)).toBeGreaterThan(0);
        } catch (error) {
          await handle.release().catch(() => undefined);
          throw error;
        }
        await handle.release();
        expect(await t.redis.exists(lock.key)).toBe(0);
      });
    });
  });
}
