/**
 * An ioredis `Cluster` whose nodes need a password (`requirepass` on every node, `redisOptions: { password }`
 * on the client). With ioredis's defaults the Cluster re-sends commands (`retryDelayOnFailover` 100,
 * `autoResendUnfulfilledCommands` on), so relock sends nothing on it: it makes its own `duplicate()` when
 * the lock client is created (src/redis/clients/ioredis.ts, `clusterConnection`), and that duplicate's node
 * options are the user's `redisOptions` with relock's settings on top. Everything relock sends goes through
 * that duplicate: the scripts (acquire, release), the keyless commands on its primaries (`INFO` and `WAIT`
 * of `syncReplicas`) and the sharded subscribers of waiters (duplicates of its nodes). Without the user's
 * `redisOptions` (Stryker's surviving mutant `redisOptions: {}`, docs/reliability.md) every one of them
 * was refused with NOAUTH.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Cluster } from 'ioredis';
import { createLockClient } from '../../src/index.js';
import { startCluster, type ClusterClient, type RedisClusterHandle } from '../support/cluster.js';
import { uniqueName, waitUntil } from '../support/helpers.js';

const PASSWORD = 'cluster-secret';
let cluster: RedisClusterHandle;
let checks: ClusterClient;
let redis: Cluster;

beforeAll(async () => {
  cluster = await startCluster({ password: PASSWORD });
  checks = await cluster.connect();
  redis = new Cluster([{ host: '127.0.0.1', port: cluster.nodes[0]!.port }], { redisOptions: { password: PASSWORD, disconnectTimeout: 100 } });
  redis.on('error', () => {});
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
}, 60_000);

afterAll(async () => {
  if (redis?.status === 'ready') await new Promise<void>((resolve) => (redis.once('end', () => resolve()), redis.disconnect()));
  else redis?.disconnect();
  await cluster?.stop();
});

/** Calls of `command` on `key`'s primary (`INFO commandstats`). */
async function calls(key: string, command: string): Promise<number> {
  const info = String(await cluster.command((await cluster.roles(key)).primary, ['INFO', 'commandstats']));
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}

/** Sharded subscribers of `channel` on the primary of its slot. */
async function subscribers(channel: string): Promise<number> {
  const { primary } = await cluster.roles(channel);
  return Number(((await cluster.command(primary, ['PUBSUB', 'SHARDNUMSUB', channel])) as unknown[])[1]);
}

describe('ioredis Cluster with redisOptions.password on a requirepass Cluster', () => {
  it("relock's own duplicate keeps the user's node options: acquires, syncs replicas, wakes a waiter by sharded pub/sub, releases", async () => {
    const userCalls = jest.spyOn(redis, 'call');
    const c = createLockClient({ redis, syncReplicas: true });
    try {
      const name = uniqueName('auth:{pw}');
      // A replica of the key's primary online (it authenticated with `masterauth`): `syncReplicas` then
      // sends `WAIT` on the duplicate's connection to that primary.
      const { primary } = await cluster.roles(name);
      await waitUntil(async () => String(await cluster.command(primary, ['INFO', 'replication'])).includes('state=online'), 10_000, 20, 'a replica to be online');
      const waits = await calls(name, 'wait');
      const held = await c.getLock(name).acquire({ leaseMs: 10_000 });
      expect(await checks.exists(name)).toBe(1);
      expect(await calls(name, 'wait')).toBeGreaterThan(waits);
      const waiter = c.getLock(name);
      const started = Date.now();
      const waiting = waiter.tryLock(5, 5, 'seconds');
      // The waiter's SSUBSCRIBE went through (a subscriber relock duplicated from its duplicate's node).
      await waitUntil(async () => (await subscribers(waiter.channel)) === 1, 3000, 10, 'the waiter to subscribe');
      await held.release();
      expect(await waiting).toBe(true);
      // Woken by the release's message, not by the holder's 10 s lease running out.
      expect(Date.now() - started).toBeLessThan(2000);
      await waiter.unlock();
      expect(await checks.exists(name)).toBe(0);
      // Every command went through relock's duplicate: none on the user's Cluster.
      expect(userCalls).not.toHaveBeenCalled();
    } finally {
      await c.shutdown();
      userCalls.mockRestore();
    }
  });
});
