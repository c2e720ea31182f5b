/**
 * A real Redis Cluster for tests: 3 primaries with 1 replica each (`redis-server --cluster-enabled yes` on
 * free ports, joined by `redis-cli --cluster create`), and helpers to fail it over. The binaries are
 * `REDIS_SERVER_BIN` and `REDIS_CLI_BIN` (see redis.ts).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createClient, createCluster } from 'redis';
import { CLI_BIN, freeClusterPort, startRedis, type RedisServer } from './redis.js';
import { sleep, waitUntil } from './helpers.js';

const run = promisify(execFile);

const newCluster = (url: string, password?: string) => createCluster({ rootNodes: [{ url }], defaults: { password } });
/** The node-redis cluster client type these tests use. */
export type ClusterClient = ReturnType<typeof newCluster>;

export interface ClusterNode {
  readonly server: RedisServer;
  readonly port: number;
}

export interface RedisClusterHandle {
  readonly nodes: ClusterNode[];
  /** `[{ url }]` root nodes for `createCluster`. */
  readonly rootNodes: Array<{ url: string }>;
  /** A connected node-redis cluster client (closed by `stop()`). */
  connect(): Promise<ClusterClient>;
  /** The node currently serving `key`'s slot as primary, and its replicas. */
  roles(key: string): Promise<{ primary: ClusterNode; replicas: ClusterNode[] }>;
  /** `CLUSTER FAILOVER` on a replica of `key`'s primary; resolves when that replica serves the slot. */
  failover(key: string): Promise<ClusterNode>;
  /** Runs a command on one node. */
  command(node: ClusterNode, args: string[]): Promise<unknown>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Every node needs this password (`requirepass`, `masterauth` for its replication); the handle's clients send it. */
  password?: string;
}

/** Starts the six nodes, forms the Cluster and waits until every node reports all slots served. */
export async function startCluster(options: ClusterOptions = {}): Promise<RedisClusterHandle> {
  const { password } = options;
  const auth = password === undefined ? [] : ['--requirepass', password, '--masterauth', password];
  const ports: number[] = [];
  while (ports.length < 6) {
    const port = await freeClusterPort();
    if (!ports.includes(port)) ports.push(port);
  }
  const servers = await Promise.all(
    ports.map((port) =>
      startRedis({ controllable: true, port, args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000', '--repl-diskless-sync-delay', '0', ...auth] }),
    ),
  );
  const nodes = servers.map((server) => ({ server, port: server.port }));
  const clients: Array<{ close(): Promise<unknown> }> = [];
  try {
    const cliAuth = password === undefined ? [] : ['-a', password, '--no-auth-warning'];
    await run(CLI_BIN, [...cliAuth, '--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes']);
    const command = async (node: ClusterNode, args: string[]): Promise<unknown> => {
      const client = createClient({ url: node.server.url, password });
      client.on('error', () => {});
      await client.connect();
      try {
        return await client.sendCommand(args);
      } finally {
        await client.close();
      }
    };
    const stateOk = async (): Promise<boolean> => {
      for (const node of nodes) {
        const info = String(await command(node, ['CLUSTER', 'INFO']));
        if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384')) return false;
      }
      return true;
    };
    await waitUntil(stateOk, 20_000, 100, 'the cluster to be ready');

    const nodeOf = (port: number): ClusterNode => nodes.find((n) => n.port === port)!;
    const roles = async (key: string): Promise<{ primary: ClusterNode; replicas: ClusterNode[] }> => {
      for (const node of nodes) {
        if (node.server.controllable === false) continue;
        const slot = Number(await command(node, ['CLUSTER', 'KEYSLOT', key]).catch(() => -1));
        if (slot < 0) continue;
        const shards = (await command(node, ['CLUSTER', 'SLOTS'])) as Array<[number, number, ...Array<[string, number, string]>]>;
        for (const [from, to, primary, ...replicas] of shards) {
          if (slot >= Number(from) && slot <= Number(to)) return { primary: nodeOf(Number(primary[1])), replicas: replicas.map((r) => nodeOf(Number(r[1]))) };
        }
      }
      throw new Error(`no node serves ${key}`);
    };
    return {
      nodes,
      rootNodes: nodes.map((n) => ({ url: n.server.url })),
      async connect() {
        const cluster = newCluster(nodes[0]!.server.url, password);
        cluster.on('error', () => {});
        await cluster.connect();
        clients.push(cluster);
        return cluster;
      },
      roles,
      command,
      async failover(key) {
        const { primary, replicas } = await roles(key);
        const replica = replicas[0]!;
        await waitUntil(async () => String(await command(replica, ['INFO', 'replication'])).includes('master_link_status:up'), 10_000, 50, 'the replica to be in sync');
        // Redis drops a manual failover that has not completed within 5 s (CLUSTER_MF_TIMEOUT), e.g. when
        // the primaries' votes come late on a starved machine, and the replica stays one without a word: CI's
        // whole suite on Node 24 (a rehearsal, 2026-12-07) saw no takeover within 15 s of one request. So a
        // replica that is still one after 6 s is asked again, up to 3 requests in all.
        const tookOver = async (): Promise<boolean> => (await roles(key)).primary.port === replica.port;
        for (let request = 1; ; request++) {
          await command(replica, ['CLUSTER', 'FAILOVER']);
          const deadline = performance.now() + 6_000;
          while (performance.now() < deadline) {
            if (await tookOver()) return replica;
            await sleep(50);
          }
          const promoted = String(await command(replica, ['INFO', 'replication'])).includes('role:master');
          if (promoted) return waitUntil(tookOver, 10_000, 50, `the cluster to see node ${replica.port} serve the slot of ${primary.port}`).then(() => replica);
          if (request === 3) throw new Error(`node ${replica.port} did not take over from ${primary.port}: 3 CLUSTER FAILOVER requests, 6 s each`);
        }
      },
      async stop() {
        await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
        await Promise.all(servers.map((s) => s.stop()));
      },
    };
  } catch (error) {
    await Promise.all(servers.map((s) => s.stop()));
    throw error;
  }
}
