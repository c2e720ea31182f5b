import { outsideContexts } from '../../context.js';
import { keySlot } from '../../keys.js';
import {
  has,
  NextEvent,
  Notifier,
  requireMethods,
  type ClientAdapter,
  type Connection,
  type ErrorSink,
  type EventSource,
  type MessageListener,
} from '../connection.js';

/** Options handed to every raw command: no per-command timer, no type mapping, no abort signal. */
const COMMAND_OPTIONS = Object.freeze({ timeout: undefined, typeMapping: undefined, abortSignal: undefined });

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

const HINT = 'pass a node-redis v5 or v6 client (createClient/createCluster/createSentinel from "redis")';

/**
 * node-redis 5 and 6: `createClient()` (connected; relock opens one `duplicate()` for pub/sub),
 * `createCluster()` (sharded pub/sub) and `createSentinel()`. Recognised by `getSlotMaster` (cluster),
 * `getSentinelNode` (sentinel) or an `isReady` property (client).
 */
export const nodeRedis: ClientAdapter = {
  family: 'node-redis',
  recognises: (client) => has(client, 'getSlotMaster') || has(client, 'getSentinelNode') || 'isReady' in client,
  open(client, onError) {
    if (has(client, 'getSlotMaster')) {
      requireMethods(client, 'node-redis cluster', ['sendCommand', 'nodeClient', 'sSubscribe', 'sUnsubscribe', 'subscribe', 'unsubscribe', 'on'], HINT);
      return clusterConnection(client as ClusterClient);
    }
    if (has(client, 'getSentinelNode')) {
      requireMethods(client, 'node-redis sentinel', ['sendCommand', 'subscribe', 'unsubscribe', 'on'], HINT);
      return sentinelConnection(client as SentinelClient);
    }
    requireMethods(client, 'node-redis client', ['sendCommand', 'duplicate', 'connect', 'subscribe', 'unsubscribe', 'on'], HINT);
    return standaloneConnection(client as StandaloneClient, false, onError);
  },
};

/** node-redis's `createClient` (imported by src/redis/clients/url.ts only when a URL is given). */
export type CreateClient = (options: { url: string; disableOfflineQueue: boolean }) => unknown;

/** A connection over a node-redis client relock creates for `url` (offline queue off) and closes itself. */
export function nodeRedisUrlConnection(createClient: CreateClient, url: string, onError: ErrorSink): Connection {
  const client = outsideContexts(() =>
    (createClient({ url, disableOfflineQueue: true }) as unknown as StandaloneClient).on('error', (e) => onError(e, 'command')),
  ) as StandaloneClient;
  return standaloneConnection(client, true, onError);
}

function standaloneConnection(client: StandaloneClient, owned: boolean, onError: ErrorSink): Connection {
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
