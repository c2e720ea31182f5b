import { outsideContexts } from '../../context.js';
import { keySlot } from '../../keys.js';
import { ClientClosedError } from '../../errors.js';
import {
  has,
  NextEvent,
  Notifier,
  Once,
  requireMethods,
  type ClientAdapter,
  type Topology,
  type Connection,
  type ErrorSink,
  type EventSource,
  type MessageListener,
} from '../connection.js';

/** Options handed to every raw command: no per-command timer, no type mapping, no abort signal. */
const COMMAND_OPTIONS = Object.freeze({ timeout: undefined, typeMapping: undefined, abortSignal: undefined });

/** A node-redis client (standalone, cluster or sentinel) with its command-options view. */
interface WithCommandOptions {
  withCommandOptions?(options: object): unknown;
  readonly _commandOptions?: object;
  readonly commandOptions?: object;
}

/**
 * What relock sends its raw commands through, and the options to pass per call (undefined: none), so
 * that they run with `COMMAND_OPTIONS` whatever the user's client defaults to. node-redis 6 merges a
 * `withCommandOptions()` view's options into raw `sendCommand` calls: the view is made once and nothing
 * is passed per call (per-call options cost an object spread per command, ~2 µs on Node 20: issue 12).
 * node-redis 5's raw `sendCommand` ignores a view's options; there `COMMAND_OPTIONS` go with each call,
 * as before, unless the client's defaults set none of them (5's default: nothing to override).
 * The view is recognised by what only 6 does (never a false positive, which would let the user's
 * timeout or type mapping through): a client's view merges the client's defaults (standalone), a
 * sentinel's `commandOptions` reflect its view's, a cluster has `_policyResolver` (6's routing policies).
 */
export function commandView<T extends object>(client: T, topology: Topology): { target: T; options: object | undefined } {
  const c = client as T & WithCommandOptions;
  const view = c.withCommandOptions?.(COMMAND_OPTIONS) as (T & WithCommandOptions) | undefined;
  const honoured =
    view !== undefined &&
    (topology === 'standalone'
      ? view._commandOptions !== COMMAND_OPTIONS
      : topology === 'sentinel'
        ? view.commandOptions !== c.commandOptions
        : '_policyResolver' in c);
  if (honoured) return { target: view, options: undefined };
  const defaults = (topology === 'sentinel' ? c.commandOptions : c._commandOptions) as Record<string, unknown> | undefined;
  const overrides = defaults !== undefined && Object.keys(COMMAND_OPTIONS).some((k) => defaults[k] !== undefined);
  return { target: client, options: overrides ? COMMAND_OPTIONS : undefined };
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
  readonly isOpen?: boolean;
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: readonly string[], options?: object): Promise<unknown>;
  getSlotMaster(slot: number): unknown;
  nodeClient(node: unknown): Promise<{ sendCommand(args: readonly string[], options?: object): Promise<unknown> }> | { sendCommand(args: readonly string[], options?: object): Promise<unknown> };
  readonly _keyPrefix?: string;
}
interface SentinelClient extends EventSource, PubSubApi {
  readonly isOpen?: boolean;
  sendCommand(isReadonly: boolean | undefined, args: readonly string[], options?: object): Promise<unknown>;
  readonly isReady?: boolean;
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
    (createClient({ url, disableOfflineQueue: true }) as StandaloneClient).on('error', (e) => onError(e, 'command')),
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
  // Commands go through a view with relock's command options set once (see `commandView`).
  const { target: commands, options } = commandView(client, 'standalone');
  const onCommandReady = reconnected.afterFirst(client.isReady);
  client.on('ready', onCommandReady);
  // The user's client closed by its owner ('end' once it is closed for good, not between reconnects):
  // relock's subscriber (its own duplicate) is closed with it, and none is opened afterwards. Without
  // that, the duplicate's socket kept a process alive that forgot `shutdown()` (issue 36).
  const closed = new Once();
  const onEnd = (): void => {
    if (owned || client.isOpen) return;
    closed.fire();
    if (subscriber) void closeClient(subscriber).catch(() => {});
  };
  client.on('end', onEnd);

  // Set by close(): no subscriber is made after it (a waiter whose first answer came back during shutdown
  // subscribes): that duplicate would stay connected, and reconnect forever once Redis went away.
  let shut = false;
  const getSubscriber = (): Promise<unknown> => {
    if (closed.fired || shut) return Promise.reject(new ClientClosedError({ client: 'node-redis' }));
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
    family: 'node-redis',
    clientKeyPrefix: owned ? undefined : client.options?.keyPrefix,
    publishCommand: 'publish',
    send(_firstKey, args) {
      if (ready !== undefined) {
        if (client.isReady) ready = undefined;
        else return Promise.race([ready, connectError!.next()]).then(() => commands.sendCommand(args, options));
      }
      return commands.sendCommand(args, options);
    },
    sendKeyless(slotKey, args) {
      return this.send(slotKey, args);
    },
    offline: () => !client.isReady,
    async subscribe(channel, listener) {
      await getSubscriber();
      await subscriber!.subscribe(channel, listener);
    },
    async unsubscribe(channel, listener) {
      if (subscriber?.isOpen) await subscriber.unsubscribe(channel, listener);
    },
    onReconnected: reconnected.add,
    onClosed: closed.add,
    async close() {
      shut = true;
      client.off?.('ready', onCommandReady);
      client.off?.('end', onEnd);
      const toClose = owned ? [subscriber, client] : [subscriber];
      await Promise.all(toClose.map((c) => (c ? closeClient(c) : Promise.resolve())));
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
  const closed = new Once();
  const onDisconnect = (): void => {
    if (cluster.isOpen === false) closed.fire();
  };
  cluster.on('disconnect', onDisconnect);
  const { target: commands, options } = commandView(cluster, 'cluster');
  return {
    topology: 'cluster',
    family: 'node-redis',
    clientKeyPrefix: cluster._keyPrefix,
    publishCommand: 'spublish',
    send: (firstKey, args) => commands.sendCommand(firstKey, false, args, options),
    offline: () => false,
    sendKeyless: async (slotKey, args) => (await cluster.nodeClient(cluster.getSlotMaster(keySlot(slotKey)))).sendCommand(args, COMMAND_OPTIONS),
    subscribe: async (channel, listener) => void (await cluster.sSubscribe!(channel, listener)),
    unsubscribe: async (channel, listener) => void (await cluster.sUnsubscribe!(channel, listener)),
    onReconnected: reconnected.add,
    onClosed: closed.add,
    close: () => {
      cluster.off?.('node-ready', reconnected.notify);
      cluster.off?.('disconnect', onDisconnect);
      return Promise.resolve();
    },
  };
}

/**
 * A node-redis Sentinel client: commands go to the current primary; after a failover node-redis moves
 * its connections (and pub/sub) to the new primary and relock wakes its waiters on `topology-change`.
 */
function sentinelConnection(sentinel: SentinelClient): Connection {
  const reconnected = new Notifier();
  sentinel.on('topology-change', reconnected.notify);
  const closed = new Once();
  const onEnd = (): void => {
    if (sentinel.isOpen === false) closed.fire();
  };
  sentinel.on('end', onEnd);
  const { target: commands, options } = commandView(sentinel, 'sentinel');
  return {
    topology: 'sentinel',
    family: 'node-redis',
    clientKeyPrefix: sentinel._keyPrefix,
    publishCommand: 'publish',
    send: (_firstKey, args) => commands.sendCommand(false, args, options),
    sendKeyless: (_slotKey, args) => commands.sendCommand(false, args, options),
    offline: () => sentinel.isReady === false,
    subscribe: async (channel, listener) => void (await sentinel.subscribe(channel, listener)),
    unsubscribe: async (channel, listener) => void (await sentinel.unsubscribe(channel, listener)),
    onReconnected: reconnected.add,
    onClosed: closed.add,
    close: () => {
      sentinel.off?.('topology-change', reconnected.notify);
      sentinel.off?.('end', onEnd);
      return Promise.resolve();
    },
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
