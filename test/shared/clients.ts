/**
 * The Redis client families the core and contract suites run on: one line each in `CLIENT_FAMILIES`.
 * A family opens the user's client the way its users would: standalone on a URL, or a Cluster from one
 * seed node with an optional address map (the TCP proxies of `lossyClient`). node-redis is the
 * topology's own client (test/shared/topology.ts); the others are opened here and closed after the file.
 */
import { Cluster as IoCluster, Redis as IoRedis } from 'ioredis';
import { Cluster as IoCluster6, Redis as IoRedis6 } from 'ioredis-v6';
import { Cluster as ValkeyCluster, Redis as ValkeyRedis } from 'iovalkey';
import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';

/** A user's client relock is given as `redis`, and how the test closes it. */
export interface OpenedClient {
  readonly client: object;
  close(): Promise<unknown>;
}

export interface ClientFamily {
  /** How the tests name it. */
  readonly name: string;
  /** False when `cluster` cannot dial nodes through an address map (GLIDE): its lossy Cluster client is node-redis. */
  readonly dialsThroughMap?: boolean;
  /** A connected standalone client on `url`. */
  standalone(url: string): Promise<OpenedClient>;
  /**
   * A connected Cluster client seeded with `port`; `map` turns a node's announced `host:port` into the
   * address to dial (families with `dialsThroughMap: false` ignore it).
   */
  cluster(port: number, map?: (address: string) => { host: string; port: number } | undefined): Promise<OpenedClient>;
}

/** ioredis `disconnectTimeout` (ms) of the test clients (see `close` below). */
const DISCONNECT_TIMEOUT_MS = 100;

/** ioredis and iovalkey share their API: one opener for both. */
function ioredisLike(name: string, Redis: typeof IoRedis, Cluster: typeof IoCluster): ClientFamily {
  const opened = async (client: IoRedis | IoCluster): Promise<OpenedClient> => {
    client.on('error', () => {});
    if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
    // disconnect(), not quit(): the server may be gone already, and a quit would wait for a reconnect.
    // A connected client resolves at 'end': ioredis closes the socket after the server's answer to its FIN
    // (or destroys it after `disconnectTimeout`), and until then its timer would outlive the file
    // (issue 17). One that is not connected (between reconnect attempts) emits no 'end', and its
    // disconnect() arms that timer on its closed socket, where nothing clears it: the clients are made with
    // `disconnectTimeout: 100` ms, so it ends within jest's 500 ms grace for a worker to exit (it kept a
    // worker 2 s past its last file: the Timeout at AbstractConnector.disconnect from topology.ts's afterAll).
    const close = (): Promise<void> =>
      new Promise((resolve) => {
        if (client.status === 'ready') client.once('end', () => resolve());
        else resolve();
        client.disconnect();
      });
    return { client, close };
  };
  return {
    name,
    standalone: (url) => opened(new Redis(url, { maxRetriesPerRequest: 3, disconnectTimeout: DISCONNECT_TIMEOUT_MS })),
    cluster: (port, map) =>
      opened(
        new Cluster([{ host: '127.0.0.1', port }], {
          ...(map && { natMap: (address: string) => map(address) ?? null }),
          redisOptions: { maxRetriesPerRequest: 3, disconnectTimeout: DISCONNECT_TIMEOUT_MS },
        } as ConstructorParameters<typeof IoCluster>[1]),
      ),
  };
}

/**
 * Valkey GLIDE 2. GLIDE dials the addresses the Cluster announces and has no address map, so a Cluster's
 * `lossyClient` (TCP proxies per node) stays on node-redis (`dialsThroughMap: false`).
 */
export const GLIDE: ClientFamily = {
  name: 'Valkey GLIDE',
  dialsThroughMap: false,
  async standalone(url) {
    const { hostname, port } = new URL(url);
    const client = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] });
    return { client, close: async () => client.close() };
  },
  async cluster(port) {
    const client = await GlideClusterClient.createClient({ addresses: [{ host: '127.0.0.1', port }] });
    return { client, close: async () => client.close() };
  },
};
// GLIDE's core logs every server error reply (relock's NOSCRIPT fallback, WRONGTYPE tests) at WARN.
Logger.setLoggerConfig('error');

export const IOREDIS = ioredisLike('ioredis', IoRedis, IoCluster);
/** ioredis 6, the newest major in relock's peer range (the devDependency `ioredis-v6`). */
export const IOREDIS6 = ioredisLike('ioredis 6', IoRedis6 as unknown as typeof IoRedis, IoCluster6 as unknown as typeof IoCluster);
export const IOVALKEY = ioredisLike('iovalkey', ValkeyRedis as unknown as typeof IoRedis, ValkeyCluster as unknown as typeof IoCluster);

/** The families besides node-redis (which every suite runs on by default). */
export const CLIENT_FAMILIES: readonly ClientFamily[] = [IOREDIS, IOREDIS6, IOVALKEY, GLIDE];
