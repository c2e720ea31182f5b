import { createClient } from 'redis';
import { InvalidArgumentError } from '../errors.js';
import { outsideContexts } from '../context.js';
import { keySlot } from '../keys.js';
import { glideConnection, glideTopology } from './clients/glide.js';

/** The kind of node-redis client relock talks through. */
export type Topology = 'standalone' | 'cluster' | 'sentinel';

/** A pub/sub message listener: `(message, channel)`. */
export type MessageListener = (message: string, channel: string) => void;

/**
 * What relock needs from Redis: raw commands routed by their first key, and pub/sub. One instance per
 * `LockClient`. Commands are sent raw (`sendCommand`), without node-redis's per-command timeout timer
 * (relock keeps its own deadlines) and without the user's `typeMapping`, so replies always have the
 * same shape; the client's own `keyPrefix` does not apply to them (see `LockClientOptions.keyPrefix`).
 */
export interface Connection {
  readonly topology: Topology;
  /** The `keyPrefix` the user's node-redis client was created with, if any. */
  readonly clientKeyPrefix: string | undefined;
  /** `'spublish'` on Redis Cluster (sharded pub/sub), `'publish'` elsewhere: the verb scripts publish with. */
  readonly publishCommand: 'publish' | 'spublish';
  /** Sends one command; `firstKey` routes it on a cluster. */
  send(firstKey: string | undefined, args: readonly string[]): Promise<unknown>;
  /**
   * Sends a command without keys (`WAIT`, `INFO`, `PUBSUB SHARDNUMSUB`) to the node serving `slotKey`:
   * on a cluster, the primary of its slot, on the connection that key's scripts use. (`send` would let
   * node-redis 6 route it by the command's policy instead: `WAIT` to every shard, `PUBSUB` to any node.)
   */
  sendKeyless(slotKey: string, args: readonly string[]): Promise<unknown>;
  subscribe(channel: string, listener: MessageListener): Promise<void>;
  unsubscribe(channel: string, listener: MessageListener): Promise<void>;
  /**
   * `callback` runs each time a connection came back after a disconnect or the deployment's topology
   * changed (failover, slots moved): pub/sub messages may have been lost meanwhile and holds may be gone.
   */
  onReconnected(callback: () => void): void;
  /** Closes the connections relock created; leaves a user-supplied client open. */
  close(): Promise<void>;
}

/** Options handed to every raw command: no per-command timer, no type mapping, no abort signal. */
const COMMAND_OPTIONS = Object.freeze({ timeout: undefined, typeMapping: undefined, abortSignal: undefined });

interface EventSource {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off?(event: string, listener: (...args: unknown[]) => void): unknown;
}
interface PubSubApi {
  subscribe(channel: string, listener: MessageListener): Promise<unknown>;
  unsubscribe(channel: string, listener: MessageListener): Promise<unknown>;
  sSubscribe?(channel: string, listener: MessageListener): Promise<unknown>;
  sUnsubscribe?(channel: string, listener: MessageListener): Promise<unknown>;
}
interface StandaloneClient extends EventSource, PubSubApi {
  sendCommand(args: readonly string[], options?: object): Promise<unknown>;
  duplicate(overrides?: object): StandaloneClient;
  connect(): Promise<unknown>;
  close?(): Promise<unknown>;
  destroy?(): unknown;
  quit?(): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly options?: { keyPrefix?: string };
}
interface ClusterClient extends EventSource, PubSubApi {
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: readonly string[], options?: object): Promise<unknown>;
  getSlotMaster(slot: number): unknown;
  nodeClient(node: unknown): Promise<{ sendCommand(args: readonly string[], options?: object): Promise<unknown> }> | { sendCommand(args: readonly string[], options?: object): Promise<unknown> };
  readonly _keyPrefix?: string;
}
interface SentinelClient extends EventSource, PubSubApi {
  sendCommand(isReadonly: boolean | undefined, args: readonly string[], options?: object): Promise<unknown>;
  getSentinelNode(): unknown;
  readonly _keyPrefix?: string;
}

const has = (value: unknown, method: string): boolean =>
  typeof (value as Record<string, unknown> | null)?.[method] === 'function';

/** Which topology `client` is, or an `InvalidArgumentError` naming the methods it lacks. */
export function detectTopology(client: unknown): Topology {
  if (client === null || typeof client !== 'object') {
    throw new InvalidArgumentError('redis', `expected a node-redis client (createClient, createCluster or createSentinel); got ${client === null ? 'null' : typeof client}`);
  }
  if (typeof (client as { status?: unknown }).status === 'string' && has(client, 'evalsha') && !('isReady' in client)) {
    throw new InvalidArgumentError('redis', 'this looks like an ioredis client; relock talks to Redis through node-redis: pass createClient(), createCluster() or createSentinel() from "redis" (v5 or v6), or give `url`');
  }
  if (has(client, 'getSlotMaster')) return requireMethods(client, 'cluster', ['sendCommand', 'nodeClient', 'sSubscribe', 'sUnsubscribe', 'subscribe', 'unsubscribe']);
  if (has(client, 'getSentinelNode')) return requireMethods(client, 'sentinel', ['sendCommand', 'subscribe', 'unsubscribe']);
  requireMethods(client, 'standalone', ['sendCommand', 'duplicate', 'connect', 'subscribe', 'unsubscribe', 'on']);
  if (!('isReady' in client)) throw new InvalidArgumentError('redis', 'the client has no `isReady`: pass a node-redis v5 or v6 client (createClient from "redis")');
  return 'standalone';
}

function requireMethods(client: object, topology: Topology, methods: string[]): Topology {
  const missing = methods.filter((m) => !has(client, m));
  if (missing.length > 0) {
    throw new InvalidArgumentError(
      'redis',
      `the ${topology} client lacks ${missing.join(', ')}: pass a node-redis v5 or v6 client (createClient/createCluster/createSentinel from "redis")`,
    );
  }
  return topology;
}

export interface ConnectionOptions {
  /** The user's node-redis client (left open by `close()`). */
  redis?: unknown;
  /** A Redis URL; relock creates and owns its connections. */
  url?: string;
  /** Called with errors the connections emit (node-redis requires an `'error'` listener). */
  onError: (error: unknown, source: 'command' | 'subscriber') => void;
}

/**
 * What is wrong with `url` as a node-redis URL (`redis://`, `rediss://` or `unix://`), or undefined when
 * nothing is. Shared with the CLI.
 */
export function redisUrlProblem(url: unknown): string | undefined {
  const usage = 'use redis://[user:password@]host:port[/db]';
  if (typeof url !== 'string' || url.length === 0) return `must be a Redis URL string; ${usage}`;
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    return `"${url}" is not a Redis URL; ${usage}`;
  }
  if (!['redis:', 'rediss:', 'unix:'].includes(protocol)) return `"${url}" is not a Redis URL: it must start with redis://, rediss:// or unix://`;
  return undefined;
}

/** Builds the `Connection` for a user-supplied client or a URL. */
export function openConnection(options: ConnectionOptions): Connection {
  if (options.redis !== undefined) {
    if (glideTopology(options.redis)) return glideConnection(options.redis, options.onError);
    const topology = detectTopology(options.redis);
    if (topology === 'cluster') return clusterConnection(options.redis as ClusterClient);
    if (topology === 'sentinel') return sentinelConnection(options.redis as SentinelClient);
    return standaloneConnection(options.redis as StandaloneClient, false, options.onError);
  }
  if (options.url === undefined) {
    throw new InvalidArgumentError('options', 'give either `redis` (a connected node-redis client) or `url` (such as "redis://localhost:6379")');
  }
  const problem = redisUrlProblem(options.url);
  if (problem) throw new InvalidArgumentError('url', problem);
  const url = options.url as string;
  const client = outsideContexts(() =>
    (createClient({ url, disableOfflineQueue: true }) as unknown as StandaloneClient).on('error', (e) => options.onError(e, 'command')),
  ) as StandaloneClient;
  return standaloneConnection(client, true, options.onError);
}

function standaloneConnection(client: StandaloneClient, owned: boolean, onError: ConnectionOptions['onError']): Connection {
  // A client relock owns starts connecting now; commands wait for it instead of failing while it is
  // offline, until it connects or its next connection error (ECONNREFUSED, ENOTFOUND: transient, so the
  // caller's retry policy and wait time decide, and the error names the cause).
  let ready: Promise<unknown> | undefined = owned ? outsideContexts(() => client.connect()) : undefined;
  ready?.catch(() => {});
  const connectError = owned ? new NextEvent(client, 'error') : undefined;
  let subscriber: StandaloneClient | undefined;
  let subscriberReady: Promise<unknown> | undefined;
  const reconnected = new Notifier();
  const onCommandReady = reconnected.afterFirst(client.isReady);
  client.on('ready', onCommandReady);

  const getSubscriber = (): Promise<unknown> => {
    if (!subscriberReady) {
      subscriberReady = outsideContexts(() => {
        const sub = client.duplicate({ disableOfflineQueue: false });
        subscriber = sub;
        sub.on('error', (e) => onError(e, 'subscriber'));
        sub.on('ready', reconnected.afterFirst(false));
        return sub.connect();
      });
      subscriberReady.catch(() => {});
    }
    return subscriberReady;
  };

  return {
    topology: 'standalone',
    clientKeyPrefix: owned ? undefined : client.options?.keyPrefix,
    publishCommand: 'publish',
    send(_firstKey, args) {
      if (ready !== undefined) {
        if (client.isReady) ready = undefined;
        else return Promise.race([ready, connectError!.next()]).then(() => client.sendCommand(args, COMMAND_OPTIONS));
      }
      return client.sendCommand(args, COMMAND_OPTIONS);
    },
    sendKeyless(slotKey, args) {
      return this.send(slotKey, args);
    },
    async subscribe(channel, listener) {
      await getSubscriber();
      await subscriber!.subscribe(channel, listener);
    },
    async unsubscribe(channel, listener) {
      if (subscriber?.isOpen) await subscriber.unsubscribe(channel, listener);
    },
    onReconnected: reconnected.add,
    async close() {
      client.off?.('ready', onCommandReady);
      const toClose = owned ? [subscriber, client] : [subscriber];
      await Promise.all(toClose.map((c) => (c ? closeClient(c) : undefined)));
    },
  };
}

/**
 * A node-redis cluster: commands are routed by their first key (the object's main key, so every key of a
 * script is in that slot), waiting uses sharded pub/sub (SSUBSCRIBE, Redis 7+) on the slot's primary.
 * node-redis follows MOVED/ASK and re-subscribes sharded channels when slots move; relock wakes its
 * waiters whenever a node connection becomes ready again, since messages may have been lost meanwhile.
 */
function clusterConnection(cluster: ClusterClient): Connection {
  const reconnected = new Notifier();
  cluster.on('node-ready', reconnected.notify);
  return {
    topology: 'cluster',
    clientKeyPrefix: cluster._keyPrefix,
    publishCommand: 'spublish',
    send: (firstKey, args) => cluster.sendCommand(firstKey, false, args, COMMAND_OPTIONS),
    sendKeyless: async (slotKey, args) => (await cluster.nodeClient(cluster.getSlotMaster(keySlot(slotKey)))).sendCommand(args, COMMAND_OPTIONS),
    subscribe: async (channel, listener) => void (await cluster.sSubscribe!(channel, listener)),
    unsubscribe: async (channel, listener) => void (await cluster.sUnsubscribe!(channel, listener)),
    onReconnected: reconnected.add,
    close: async () => void cluster.off?.('node-ready', reconnected.notify),
  };
}

/**
 * A node-redis Sentinel client: commands go to the current primary; after a failover node-redis moves
 * its connections (and pub/sub) to the new primary and relock wakes its waiters on `topology-change`.
 */
function sentinelConnection(sentinel: SentinelClient): Connection {
  const reconnected = new Notifier();
  sentinel.on('topology-change', reconnected.notify);
  return {
    topology: 'sentinel',
    clientKeyPrefix: sentinel._keyPrefix,
    publishCommand: 'publish',
    send: (_firstKey, args) => sentinel.sendCommand(false, args, COMMAND_OPTIONS),
    sendKeyless: (_slotKey, args) => sentinel.sendCommand(false, args, COMMAND_OPTIONS),
    subscribe: async (channel, listener) => void (await sentinel.subscribe(channel, listener)),
    unsubscribe: async (channel, listener) => void (await sentinel.unsubscribe(channel, listener)),
    onReconnected: reconnected.add,
    close: async () => void sentinel.off?.('topology-change', reconnected.notify),
  };
}

/** A promise that rejects with the next `event` of `source` (one listener however many callers wait). */
class NextEvent {
  private pending: Promise<never> | undefined;
  private rejectPending: ((error: unknown) => void) | undefined;

  constructor(source: EventSource, event: string) {
    source.on(event, (error: unknown) => {
      const reject = this.rejectPending;
      this.pending = this.rejectPending = undefined;
      reject?.(error);
    });
  }

  next(): Promise<never> {
    if (!this.pending) {
      this.pending = new Promise<never>((_, reject) => (this.rejectPending = reject));
      this.pending.catch(() => {});
    }
    return this.pending;
  }
}

/** Callbacks run when a connection is back or the topology changed. */
class Notifier {
  private readonly callbacks: Array<() => void> = [];
  readonly add = (callback: () => void): void => void this.callbacks.push(callback);
  readonly notify = (): void => {
    for (const callback of this.callbacks) callback();
  };
  /** A `'ready'` listener that notifies from the second ready on (or the first, when already `ready`). */
  afterFirst(alreadyReady: boolean): () => void {
    let seen = alreadyReady;
    return () => {
      if (seen) this.notify();
      seen = true;
    };
  }
}

async function closeClient(client: StandaloneClient): Promise<void> {
  if (!client.isOpen) return;
  if (!client.isReady) {
    // Still connecting, or reconnecting: stop it from trying again.
    client.destroy?.();
    return;
  }
  try {
    if (client.close) await client.close();
    else await client.quit?.();
  } catch {
    client.destroy?.();
  }
}
