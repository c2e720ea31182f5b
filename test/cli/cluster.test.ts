/**
 * The `relock` command against a real Redis Cluster (3 primaries, 1 replica each) with `--cluster`:
 * commands routed by the object's slot, subscribers counted with `PUBSUB SHARDNUMSUB`, `list` scanning
 * every primary, `watch` on sharded channels.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { createLockClient, runInContext, type LockClient } from '../../src/index.js';
import { json, runCli, startCli } from '../support/cli.js';
import { startCluster, type RedisClusterHandle } from '../support/cluster.js';
import { uniqueName, waitUntil } from '../support/helpers.js';

let cluster: RedisClusterHandle;
let client: LockClient;
let url: string;

beforeAll(async () => {
  cluster = await startCluster();
  client = createLockClient({ redis: await cluster.connect() });
  url = cluster.nodes[0]!.server.url;
}, 60_000);
afterEach(async () => {
  await client.shutdown();
  client = createLockClient({ redis: await cluster.connect() });
});
afterAll(async () => {
  await client?.shutdown();
  await cluster?.stop();
});

async function shardSubscribers(channel: string): Promise<number> {
  const { primary } = await cluster.roles(channel);
  return Number(((await cluster.command(primary, ['PUBSUB', 'SHARDNUMSUB', channel])) as unknown[])[1]);
}

/** A name whose slot is served by another primary than the node the CLI is pointed at. */
async function remoteName(prefix: string): Promise<string> {
  for (;;) {
    const name = uniqueName(prefix);
    if ((await cluster.roles(name)).primary !== cluster.nodes[0]) return name;
  }
}

describe('relock --cluster', () => {
  it('inspects a lock on another primary, with its sharded subscribers', async () => {
    const name = await remoteName('cli-cluster');
    const lock = client.getLock(name);
    const [first] = await runInContext(async () => [await lock.acquire(), await lock.acquire()]);
    const other = createLockClient({ redis: await cluster.connect() });
    const waiting = other.getLock(name).acquire({ waitMs: 60_000 });
    waiting.catch(() => {}); // awaited below; this only keeps a failed test from adding an unhandled rejection
    await waitUntil(async () => (await shardSubscribers(lock.channel)) === 1, 5000, 10, 'the waiter to subscribe');
    const result = await runCli(['inspect', name, '--json', '--cluster', '--url', url]);
    expect(result.code).toBe(0);
    const d = json(result);
    expect(d).toMatchObject({ type: 'lock', holders: [{ owner: first.owner, holds: 2 }], channels: [{ channel: lock.channel, subscribers: 1 }] });
    expect(d.ttlMs).toBeGreaterThan(20_000);
    const withoutCluster = await runCli(['inspect', name, '--url', url]);
    expect(withoutCluster.code).toBe(1);
    expect(withoutCluster.stderr).toMatch(/is a Redis Cluster node \(MOVED .*\); add --cluster/);
    const forced = await runCli(['force-unlock', name, '--yes', '--cluster', '--url', url]);
    expect(forced.code).toBe(0);
    await (await waiting).release();
    await other.shutdown();
  }, 90_000);

  it('lists objects on every primary', async () => {
    const prefix = `cli-${randomBytes(3).toString('hex')}:`;
    const prefixed = createLockClient({ redis: await cluster.connect(), keyPrefix: prefix });
    const names = Array.from({ length: 9 }, (_, i) => `obj${i}`);
    const handles = await Promise.all(names.map((name) => prefixed.getLock(name).acquire({ leaseMs: 60_000 })));
    const primaries = new Set(await Promise.all(names.map(async (name) => (await cluster.roles(prefix + name)).primary.port)));
    expect(primaries.size).toBeGreaterThan(1);
    const result = await runCli(['list', '--json', '--cluster', '--url', url, '--prefix', prefix]);
    expect(result.code).toBe(0);
    const listing = json<{ nodes: string[]; objects: Array<{ name: string; type: string }> }>(result);
    expect(listing.nodes).toHaveLength(3);
    expect(listing.objects).toEqual(names.map((name) => expect.objectContaining({ name, type: 'lock' })));
    for (const handle of handles) await handle.release();
    await prefixed.shutdown();
  }, 90_000);

  it('watches acquisitions and releases through the sharded channel', async () => {
    const lock = client.getLock(await remoteName('cli-cluster-watch'));
    const watcher = startCli(['watch', lock.name, '--json', '--cluster', '--url', url, '--count', '2']);
    try {
      await watcher.nextWhere((l) => l.event === 'watching', 'the watch to start');
      await waitUntil(async () => (await shardSubscribers(lock.channel)) === 1, 5000, 10, 'the watch to subscribe');
      const handle = await lock.acquire({ leaseMs: 30_000 });
      expect(await watcher.nextWhere((l) => l.event === 'acquire', 'an acquire')).toMatchObject({ owner: handle.owner, holds: 1 });
      await handle.release();
      expect(await watcher.nextWhere((l) => l.event === 'release', 'a release')).toMatchObject({ owner: handle.owner, holds: 0 });
      expect(await watcher.exited).toBe(0);
    } finally {
      await watcher.stop();
    }
  }, 90_000);
});
