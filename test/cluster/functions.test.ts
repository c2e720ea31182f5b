/**
 * `scripting: 'functions'` on a real Redis Cluster (3 primaries, 1 replica each): the library is loaded on
 * each primary lazily, by the first call routed there, and a replica promoted by a failover serves the
 * library it received by replication (no load). The Cluster variant of the least-privilege ACL rule
 * (docs/security.md) suffices for locking, waking a waiter and releasing.
 */
import { describe, expect, it } from '@jest/globals';
import { createCluster } from 'redis';
import { createLockClient, functionsLibrary, type LockClient } from '../../src/index.js';
import { aclRule } from '../support/acl.js';
import { keySlot } from '../../src/keys.js';
import { useClusterTopology } from '../shared/topology.js';
import { waitUntil } from '../support/helpers.js';

const { topology, cluster } = useClusterTopology();

/** Calls of `command` on one node (`INFO commandstats`). */
async function calls(node: Parameters<ReturnType<typeof cluster>['command']>[0], command: string): Promise<number> {
  const info = String(await cluster().command(node, ['INFO', 'commandstats']));
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}

/** Names whose slots are served by `count` different primaries. */
async function namesOnPrimaries(count: number): Promise<string[]> {
  const byPrimary = new Map<number, string>();
  for (let i = 0; byPrimary.size < count; i++) {
    const name = `fn:{${i}}`;
    const { primary } = await cluster().roles(name);
    if (!byPrimary.has(primary.port)) byPrimary.set(primary.port, name);
  }
  return [...byPrimary.values()];
}

describe('functions mode on a Cluster', () => {
  it('loads the library on each primary by its first call, once; a failover keeps it (replicated), with no load on the new primary', async () => {
    const c = topology().client({ scripting: 'functions' });
    const names = await namesOnPrimaries(3);
    for (const name of names) {
      const { primary } = await cluster().roles(name);
      const before = await calls(primary, 'function\\|load');
      for (let i = 0; i < 2; i++) await (await c.getLock(name).acquire({ leaseMs: 5000 })).release();
      expect({ name, loads: (await calls(primary, 'function\\|load')) - before }).toEqual({ name, loads: 1 });
    }
    const name = names[0]!;
    expect(keySlot(name)).toBeGreaterThanOrEqual(0);
    // Right after the cluster was created, CLUSTER SLOTS may not list the replica yet.
    await waitUntil(async () => (await cluster().roles(name)).replicas.length > 0, 10_000, 50, 'the replica to be listed');
    const promoted = await cluster().failover(name);
    const loads = await calls(promoted, 'function\\|load');
    await (await c.getLock(name).acquire({ leaseMs: 5000 })).release();
    expect(await calls(promoted, 'function\\|load')).toBe(loads);
    expect(await calls(promoted, 'fcall')).toBeGreaterThanOrEqual(2);
    expect(functionsLibrary().name).toMatch(/^relock_/);
  });
});

describe('least privilege on a Cluster', () => {
  it('a user with the Cluster rule of its mode (functions, eval) locks, wakes a waiter by sharded pub/sub and releases', async () => {
    for (const mode of ['functions', 'eval'] as const) {
      const username = `relock-cluster-${mode}`;
      for (const node of cluster().nodes) await cluster().command(node, ['ACL', 'SETUSER', username, ...aclRule(mode, 'app:', 'pw', true)]);
      const redis = createCluster({ rootNodes: cluster().rootNodes, defaults: { username, password: 'pw' } });
      redis.on('error', () => {});
      await redis.connect();
      let c: LockClient | undefined;
      try {
        c = createLockClient({ redis, scripting: mode, keyPrefix: 'app:' });
        const name = `acl:{${mode}}`;
        const held = await c.getLock(name).acquire({ leaseMs: 10_000 });
        const started = Date.now();
        const waiter = c.getLock(name);
        const waiting = waiter.tryLock(5, 5, 'seconds');
        // The waiter's SSUBSCRIBE went through: it is parked on the channel (not polling).
        await waitUntil(async () => (await topology().subscribers(waiter.channel)) === 1, 3000, 10, 'the waiter to subscribe');
        await held.release();
        expect({ mode, acquired: await waiting }).toEqual({ mode, acquired: true });
        expect(Date.now() - started).toBeLessThan(2000);
        await c.getLock(name).forceUnlock();
      } finally {
        await c?.shutdown();
        await redis.close();
      }
    }
  });
});
