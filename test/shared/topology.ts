/**
 * What a topology-independent ("core") test needs: lock clients on the deployment under test, a plain
 * Redis client for checks, the subscriber count of a channel (PUBSUB NUMSUB, or SHARDNUMSUB on the
 * channel's primary in a cluster), commands and SCAN on the node of a key's slot, and lock clients whose
 * connections pass through TCP proxies that can lose a reply. Core suites in test/shared/ and
 * test/contract/ run on standalone Redis (`useStandaloneTopology`) and on Cluster (`useClusterTopology`);
 * some run on Sentinel too (`useSentinelTopology`, test/shared/sentinel-topology.ts).
 */
import { afterAll, afterEach, beforeAll, expect } from '@jest/globals';
import { createCluster } from 'redis';
import { createLockClient, type LockClient, type LockClientOptions, type ScriptingMode } from '../../src/index.js';
import { keySlot } from '../../src/keys.js';
import { startCluster, type RedisClusterHandle } from '../support/cluster.js';
import { useRedis } from '../support/harness.js';
import { aclRule } from '../support/acl.js';
import { connect, lockClient, numsub, type Redis } from '../support/helpers.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';
import type { ClientFamily, OpenedClient } from './clients.js';

export interface RedisLike {
  del(key: string): Promise<number>;
  exists(key: string): Promise<number>;
  pTTL(key: string): Promise<number>;
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<unknown>;
  hGet(key: string, field: string): Promise<string | null | undefined>;
  hSet(key: string, field: string, value: string): Promise<number>;
  hGetAll(key: string): Promise<Record<string, string>>;
}

type ClientOptions = Omit<LockClientOptions, 'redis' | 'url'>;

/** A lock client whose connections pass through proxies, and the loss of one reply. */
export interface LossyClient {
  readonly client: LockClient;
  /**
   * Loses the reply to the next script call (`EVALSHA`/`EVAL`) that names `key`: Redis runs it, the
   * client sees its connection close with the call in flight. Resolves once the reply was dropped.
   */
  loseReplyTo(key: string): Promise<void>;
}

export interface Topology {
  /** The deployment, with the client family when it is not node-redis (`'cluster on ioredis'`). */
  readonly name: string;
  /** A lock client on the deployment (through the topology's client family), shut down after each test. */
  client(options?: ClientOptions): LockClient;
  /** A node-redis client for checks. */
  readonly redis: RedisLike;
  /** Where the deployment listens (the server, or every Cluster node): seeds for clients of other libraries. */
  readonly seeds: ReadonlyArray<{ host: string; port: number }>;
  /** Subscribers of `channel` right now. */
  subscribers(channel: string): Promise<number>;
  /** Runs one command on the primary that serves `key`'s slot. */
  command(key: string, args: string[]): Promise<unknown>;
  /** The keys matching `pattern` on the primary that serves `slotKey`'s slot (SCAN). */
  keys(pattern: string, slotKey: string): Promise<string[]>;
  /** A lock client through TCP proxies (closed with its proxies after the test). */
  lossyClient(options?: ClientOptions): Promise<LossyClient>;
}

/** A script call (or a `SET`: the non-reentrant lock's acquire) that names `key`: the request the proxy loses the reply of. */
const scriptCallOn =
  (key: string) =>
  (request: Buffer): boolean =>
    request.includes(key) && (request.includes('EVAL') || request.includes('FCALL') || request.includes('\r\nSET\r\n'));

/** Things to close after the current test, last opened first. */
function useDisposer(): (close: () => Promise<unknown>) => void {
  const open: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close().catch(() => {});
  });
  return (close) => open.push(close);
}

/** How the lock clients of a standalone topology run: scripting mode, and a Redis user of their own. */
export interface StandaloneOptions {
  /** Lock clients go through this family's client (default node-redis); checks use node-redis. */
  family?: ClientFamily;
  /** The `scripting` option of every lock client (default: relock's). */
  scripting?: ScriptingMode;
  /**
   * Lock clients connect as a Redis user created with exactly the least-privilege rule of this mode
   * (test/support/acl.ts, docs/security.md) for `keyPrefix`, which they use as their key prefix.
   */
  acl?: { mode: 'eval' | 'functions'; keyPrefix: string };
}

/**
 * The user's client of `family` (opened before the file's tests, closed after them with `closeAfterAll`,
 * while its server still runs), or undefined for node-redis, which the topology opens itself.
 */
function useFamilyClient(family: ClientFamily | undefined, open: (family: ClientFamily) => Promise<OpenedClient>, closeAfterAll: (close: () => Promise<unknown>) => void): () => object | undefined {
  let opened: OpenedClient | undefined;
  beforeAll(async () => {
    if (family) opened = await open(family);
  }, 60_000);
  closeAfterAll(async () => opened?.close());
  return () => opened?.client;
}

/**
 * The topology of a test file with a redis-server of its own (registers the file's hooks). Lock clients
 * go through `family`'s client (default node-redis); checks use node-redis.
 */
export function useStandaloneTopology(options: StandaloneOptions = {}): () => Topology {
  const { family } = options;
  const env = useRedis();
  const familyClient = useFamilyClient(family, (f) => f.standalone(env.server.url), env.closeBeforeStop);
  const dispose = useDisposer();
  const { scripting, acl } = options;
  const user = acl && { username: `relock-${acl.mode}`, password: 'least-privilege' };
  let userRedis: Redis | undefined;
  if (acl && user) {
    beforeAll(async () => {
      await env.redis.sendCommand(['ACL', 'SETUSER', user.username, ...aclRule(acl.mode, acl.keyPrefix, user.password)]);
      userRedis = await connect(env.server.url, user);
    });
    env.closeBeforeStop(async () => userRedis?.close());
  }
  const defaults = { ...(scripting && { scripting }), ...(acl && { keyPrefix: acl.keyPrefix }) };
  return () => ({
    name: family ? `standalone on ${family.name}` : 'standalone',
    client: (clientOptions) => lockClient(userRedis ?? familyClient() ?? env.redis, { ...defaults, ...clientOptions }),
    redis: env.redis,
    seeds: [{ host: env.server.host, port: env.server.port }],
    subscribers: (channel) => numsub(env.redis, channel),
    command: (_key, args) => env.redis.sendCommand(args),
    keys: async (pattern) => {
      const found: string[] = [];
      for await (const batch of env.redis.scanIterator({ MATCH: pattern, COUNT: 1000 })) found.push(...batch);
      return found;
    },
    async lossyClient(options) {
      const proxy = await startProxy(env.server.host, env.server.port);
      dispose(() => proxy.close());
      const url = `redis://127.0.0.1:${proxy.port}`;
      const redis = family ? await family.standalone(url) : await connect(url, user).then((client) => ({ client, close: () => client.close() }));
      dispose(() => redis.close());
      return { client: lockClient(redis.client, { ...defaults, ...options }), loseReplyTo: (key) => proxy.loseReply({ match: scriptCallOn(key) }) };
    },
  });
}

/**
 * The topology of a test file with a Redis Cluster of its own (3 primaries, 1 replica each; started
 * before its tests, stopped after them, with a check that no sharded subscription was left behind).
 * Lock clients go through `family`'s client (default node-redis); checks use node-redis.
 */
export function useClusterTopology(family?: ClientFamily): { topology: () => Topology; cluster: () => RedisClusterHandle } {
  let cluster: RedisClusterHandle;
  let redis: Awaited<ReturnType<RedisClusterHandle['connect']>>;
  const clients: LockClient[] = [];
  const channels = new Set<string>();
  const shardSubscribers = async (channel: string): Promise<number> => {
    channels.add(channel);
    const { primary } = await cluster.roles(channel);
    const reply = (await cluster.command(primary, ['PUBSUB', 'SHARDNUMSUB', channel])) as unknown[];
    return Number(reply[1]);
  };
  const client = (options?: ClientOptions, on: object = familyClient() ?? redis): LockClient => {
    const made = createLockClient({ redis: on, ...options });
    clients.push(made);
    return made;
  };
  /** The cluster client's connection to the primary of `key`'s slot. */
  const primaryOf = async (key: string): Promise<{ sendCommand(args: string[]): Promise<unknown> }> => redis.nodeClient(redis.getSlotMaster(keySlot(key)));
  beforeAll(async () => {
    cluster = await startCluster();
    redis = await cluster.connect();
  }, 60_000);
  // Its afterAll is declared before the one that stops the cluster: the client closes first.
  const familyClient = useFamilyClient(family, (f) => f.cluster(cluster.nodes[0]!.port), (close) => afterAll(close));
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.shutdown()));
  });
  // Registered after the hook above: lock clients shut down before the connections and proxies close.
  const dispose = useDisposer();
  afterAll(async () => {
    // Stopped even when a subscription was left behind: the file fails either way, and a cluster left
    // running (six redis-servers, a connected client) would keep the jest worker alive until jest kills it.
    try {
      for (const channel of channels) expect(await shardSubscribers(channel)).toBe(0);
    } finally {
      await cluster?.stop();
    }
  });
  const topology = (): Topology => ({
    name: family ? `cluster on ${family.name}` : 'cluster',
    client,
    redis,
    seeds: cluster.nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
    subscribers: shardSubscribers,
    command: async (key, args) => (await primaryOf(key)).sendCommand(args),
    keys: async (pattern, slotKey) => {
      const primary = await primaryOf(slotKey);
      const found: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = (await primary.sendCommand(['SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000'])) as [string, string[]];
        found.push(...batch);
        cursor = String(next);
      } while (cursor !== '0');
      return found;
    },
    async lossyClient(options) {
      const proxies = new Map<number, TcpProxy>();
      for (const node of cluster.nodes) {
        const proxy = await startProxy('127.0.0.1', node.port);
        proxies.set(node.port, proxy);
        dispose(() => proxy.close());
      }
      const viaProxy = (address: string): { host: string; port: number } | undefined => {
        const proxy = proxies.get(Number(address.split(':').pop()));
        return proxy && { host: '127.0.0.1', port: proxy.port };
      };
      const first = proxies.get(cluster.nodes[0]!.port)!;
      const lossy = family && family.dialsThroughMap !== false ? await family.cluster(first.port, viaProxy) : await nodeRedisCluster(first.port, viaProxy);
      dispose(() => lossy.close());
      return {
        client: client(options, lossy.client),
        // Armed on every node's proxy at once (the call may be on its way already: no time to look up its
        // node); only the node of the key's slot sees it, and the others are disarmed after the loss.
        loseReplyTo: async (key) => {
          await Promise.race([...proxies.values()].map((proxy) => proxy.loseReply({ match: scriptCallOn(key) })));
          for (const proxy of proxies.values()) proxy.disarm();
        },
      };
    },
  });
  return { topology, cluster: () => cluster };
}

/** A connected node-redis cluster client seeded with `port`, dialling each node at `map(address)`. */
async function nodeRedisCluster(port: number, map: (address: string) => { host: string; port: number } | undefined): Promise<OpenedClient> {
  const cluster = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${port}` }], nodeAddressMap: map });
  cluster.on('error', () => {});
  await cluster.connect();
  return { client: cluster, close: () => cluster.close() };
}
