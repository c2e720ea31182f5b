/**
 * The core suites on a real Redis Cluster (3 primaries, 1 replica each): sharded pub/sub, per-slot
 * scripts and renewals, and failover.
 */
import { describe, expect, it } from '@jest/globals';
import { CrossSlotError } from '../../src/index.js';
import { familyCoreTests } from '../shared/family-core.js';
import { ownershipCoreTests } from '../shared/ownership-core.js';
import { useClusterTopology } from '../shared/topology.js';
import { sleep, uniqueName, waitUntil } from '../support/helpers.js';

const { topology, cluster } = useClusterTopology();

familyCoreTests(topology);
ownershipCoreTests(topology);

describe('on Redis Cluster', () => {

  it('renews holds in many slots, one script call per slot', async () => {
    const client = topology().client({ lockWatchdogTimeout: 900 });
    const locks = Array.from({ length: 30 }, () => client.getLock(uniqueName()));
    await Promise.all(locks.map((l) => l.lock()));
    await waitUntil(() => client.stats().renewalCalls >= 30, 3000, 10, 'a renewal round');
    await sleep(400);
    for (const lock of locks) expect(await topology().redis.pTTL(lock.key)).toBeGreaterThan(0);
    await Promise.all(locks.map((l) => l.unlock()));
  });

  it('names whose braces do not form a hash tag fail fast with CrossSlotError explaining hash tags (known failure 22)', () => {
    const client = topology().client();
    expect(() => client.getLock('orders{}:1')).toThrow(CrossSlotError);
    expect(() => client.getLock('orders}1')).toThrow(/hash tag/);
  });

  it('syncReplicas: WAIT goes to the primary of the lock\'s slot, on the connection its script used', async () => {
    const waits = async (): Promise<number[]> =>
      Promise.all(cluster().nodes.map(async (n) => Number(/cmdstat_wait:calls=(\d+)/.exec(String(await cluster().command(n, ['INFO', 'commandstats'])))?.[1] ?? 0)));
    const client = topology().client({ syncReplicas: { timeout: 2000 } });
    const lock = client.getLock(uniqueName());
    const { primary } = await cluster().roles(lock.key);
    const before = await waits();
    expect(await lock.tryLock(0, 5, 'seconds')).toBe(true);
    const after = await waits();
    const delta = after.map((calls, i) => calls - before[i]!);
    expect(delta).toEqual(cluster().nodes.map((n) => (n === primary ? 1 : 0)));
    await lock.unlock();
  });

  it('a lock held through a CLUSTER FAILOVER stays held, is renewed on the new primary, and its waiter gets it after release', async () => {
    const client = topology().client({ lockWatchdogTimeout: 3000 });
    const name = `failover:{${uniqueName()}}`;
    const handle = await client.getLock(name).acquire();
    const waiterClient = topology().client();
    const waiting = waiterClient.getLock(name).tryLock(60, 'seconds');
    waiting.catch(() => {}); // awaited below; this only keeps a failed test from adding an unhandled rejection
    const newPrimary = await cluster().failover(name);
    const renewalsBefore = client.stats().renewalCalls;
    await waitUntil(() => client.stats().renewalCalls >= renewalsBefore + 2, 5000, 20, 'renewals on the new primary');
    expect(handle.signal.aborted).toBe(false);
    const ttl = Number(await cluster().command(newPrimary, ['PTTL', client.getLock(name).key]));
    expect(ttl).toBeGreaterThan(1000);
    await handle.release();
    expect(await waiting).toBe(true);
    await waiterClient.getLock(name).forceUnlock();
  }, 60_000);
});
