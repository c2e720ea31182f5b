import { ClientClosedError } from '../../errors.js';
import { outsideContexts } from '../../context.js';
import { keySlot } from '../../keys.js';
import { has, NextEvent, Notifier, Once, requireMethods, type ClientAdapter, type Connection, type ErrorSink, type EventSource, type MessageListener } from '../connection.js';

/** What relock uses of an ioredis (or iovalkey) `Redis`: a standalone node, or the primary found through `sentinels`. */
interface IoRedis extends EventSource {
  readonly status: string;
  readonly options: { keyPrefix?: string; sentinels?: unknown; host?: string; port?: number; autoResendUnfulfilledCommands?: boolean };
  call(command: string, ...args: string[]): Promise<unknown>;
  duplicate(override?: object): IoRedis;
  connect(): Promise<unknown>;
  disconnect(): void;
  quit(): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  ssubscribe(channel: string): Promise<unknown>;
  sunsubscribe(channel: string): Promise<unknown>;
}

/** What relock uses of an ioredis (or iovalkey) `Cluster`. */
interface IoCluster extends EventSource {
  readonly isCluster: true;
  readonly status: string;
  readonly options: { keyPrefix?: string; redisOptions?: object; retryDelayOnFailover?: number };
  /** Slot → node keys (`host:port`), the primary first: ioredis's routing table. */
  readonly slots: ReadonlyArray<readonly string[] | undefined>;
  call(command: string, ...args: string[]): Promise<unknown>;
  duplicate(startupNodes?: unknown[], options?: object): IoCluster;
  nodes(role: 'master'): IoRedis[];
  connect(): Promise<unknown>;
  disconnect(): void;
  quit(): Promise<unknown>;
}

/** ioredis's (or iovalkey's) `Redis` class (imported by src/redis/clients/url.ts only when a URL is given). */
export type IoRedisConstructor = new (url: string, options: object) => unknown;

/**
 * ioredis `disconnectTimeout` (ms) of the connections relock creates and closes itself. `disconnect()`
 * arms a timer for it (then destroys the socket) that only the socket's 'close' clears; on a connection
 * between reconnect attempts, whose socket closed already, nothing clears it, and at ioredis's default
 * (2000 ms) `shutdown()` while Redis is down kept the process alive 2 s longer (issue 17).
 */
const OWNED_DISCONNECT_TIMEOUT_MS = 100;

/**
 * A connection over an ioredis (or iovalkey) client relock creates for `url` and closes itself: offline
 * queue off (no lock command runs late after a reconnect), `maxRetriesPerRequest: 0`; commands issued
 * before the first connect wait for it (or for its first error).
 */
export function ioredisUrlConnection(Redis: IoRedisConstructor, url: string, onError: ErrorSink): Connection {
  const client = outsideContexts(() => new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, disconnectTimeout: OWNED_DISCONNECT_TIMEOUT_MS }) as IoRedis);
  client.on('error', (e) => onError(e, 'command'));
  return standaloneConnection(client, onError, true);
}

const HINT = 'pass an ioredis (v5) or iovalkey `Redis` or `Cluster` ("new Redis(...)", "new Cluster([...])")';

/**
 * ioredis 5 and iovalkey (the same shapes): `new Redis()` (standalone, or with `sentinels`) and
 * `new Cluster()`. Recognised by `call` with a string `status` (node-redis has neither); a `Cluster` by
 * `isCluster === true`.
 *
 * The traits of these clients, and what relock does about them:
 * - re-sending: by default ioredis sends a command again after a reconnect when its connection closed
 *   with the command in flight (`autoResendUnfulfilledCommands`; a `Cluster` also retries it on
 *   another connection after `retryDelayOnFailover`). The command may then run twice, and relock's
 *   scripts are idempotent only for the retries relock itself makes (it marks them), so relock sends its
 *   commands on your client only when it has `autoResendUnfulfilledCommands: false` (a `Cluster`:
 *   `retryDelayOnFailover: 0` and `redisOptions.autoResendUnfulfilledCommands: false`) and no
 *   `keyPrefix`; otherwise on one `duplicate()` of it with those settings (closed by `shutdown()`).
 * - `keyPrefix`: ioredis prefixes the keys of `call` (EVAL/EVALSHA keys included) but not channels. relock
 *   applies the prefix itself, to keys and channels alike (reported as `clientKeyPrefix`, the default
 *   `LockClientOptions.keyPrefix`), and sends its commands on a duplicate without it (see above), which
 *   would otherwise prefix its keys twice.
 * - offline queue (`enableOfflineQueue`, default on) and `maxRetriesPerRequest` (default 20): commands
 *   issued while your client is disconnected wait in its queue; relock's `responseTimeout` bounds the
 *   caller's wait either way, and a command that ran late is handled as an ambiguous reply (an
 *   acquisition nobody renews frees itself within its lease). `MaxRetriesPerRequestError` counts as
 *   ambiguous, because `autoResendUnfulfilledCommands` may have sent the command before the reconnect.
 * - `enableAutoPipelining`: relock's commands go through `call`, so they join the automatic pipelines of
 *   the connection they are sent on (the duplicate inherits the option; measured in scripts/bench/).
 * - `autoResubscribe`: relock's subscriber is its own connection (`duplicate()` with `autoResubscribe`
 *   and `autoResendUnfulfilledCommands` on: an UNSUBSCRIBE cut in flight is sent again after the
 *   re-subscription), so your settings do not affect it; after every reconnect relock also wakes its waiters, since
 *   messages may have been lost. ioredis re-subscribes only what was subscribed on a connection that
 *   became ready, and writes a SUBSCRIBE made during its handshake before its ready check (which then
 *   fails): relock sends its pub/sub commands only once the subscriber is ready (`Subscriber.ready`).
 * - Cluster: commands are routed by ioredis on their first key (relock's key; every key of a script is in
 *   its slot); keyless commands (`WAIT`, `INFO`, `PUBSUB`) go to the primary of the slot from ioredis's
 *   slot table; waiting uses sharded pub/sub (`SSUBSCRIBE`) on one subscriber connection per primary,
 *   moved when the slot table changes (iovalkey has no sharded subscriber of its own, and ioredis's
 *   needs `shardedSubscribers: true`).
 * - `disconnectTimeout` (default 2 s): the connections relock opens itself (its duplicates and their
 *   Cluster nodes, the client for `url`) use 100 ms (`OWNED_DISCONNECT_TIMEOUT_MS`), so `shutdown()`
 *   while Redis is down leaves no timer that keeps the process alive; your client keeps its own setting.
 */
export const ioredis: ClientAdapter = {
  family: 'ioredis',
  recognises: (client) => has(client, 'call') && typeof (client as { status?: unknown }).status === 'string',
  open(client, onError) {
    if ((client as { isCluster?: unknown }).isCluster === true) {
      requireMethods(client, 'ioredis Cluster', ['call', 'duplicate', 'nodes', 'on', 'off'], HINT);
      return clusterConnection(client as IoCluster, onError);
    }
    requireMethods(client, 'ioredis Redis', ['call', 'duplicate', 'on', 'off'], HINT);
    return standaloneConnection(client as IoRedis, onError);
  },
};

/** `call` with relock's raw arguments: the command name as relock spells it (no ioredis reply or argument transformer applies). */
const call = (client: { call(command: string, ...args: string[]): Promise<unknown> }, args: readonly string[]): Promise<unknown> =>
  client.call(args[0], ...args.slice(1));

/**
 * A subscriber connection relock owns (a `duplicate()` that connects now and re-subscribes after
 * reconnects), and `ready()`, which every (S)SUBSCRIBE and (S)UNSUBSCRIBE on it awaits first.
 */
interface Subscriber {
  readonly client: IoRedis;
  /**
   * Resolves when the connection is `ready` (at once when it is) or ended. ioredis writes pub/sub
   * commands straight to the socket during its handshake (status `connect`: Redis allows them while
   * loading), which puts the connection in subscriber mode before ioredis's ready check; Redis then
   * refuses the check's INFO, ioredis drops that connection and, since it never was ready, re-subscribes
   * nothing subscribed on it, although the SUBSCRIBE was answered: a waiter would sleep on a channel
   * nobody subscribes, woken only by its timer (issue 11). Sent once `ready`, a command also follows
   * ioredis's own re-subscription after a reconnect.
   */
  ready(): Promise<void>;
}

function subscriberOf(node: IoRedis, onError: ErrorSink, reconnected: Notifier): Subscriber {
  return outsideContexts(() => {
    // `autoResendUnfulfilledCommands`: an (UN)SUBSCRIBE in flight when the connection drops is sent again
    // after ioredis's re-subscription (pub/sub commands may run twice); off, its promise would never settle
    // while ioredis subscribes the channel again.
    const client = node.duplicate({ lazyConnect: true, enableOfflineQueue: true, autoResubscribe: true, autoResendUnfulfilledCommands: true, keyPrefix: '', disconnectTimeout: OWNED_DISCONNECT_TIMEOUT_MS });
    client.on('error', (e) => onError(e, 'subscriber'));
    client.on('ready', reconnected.afterFirst(false));
    client.connect().catch(() => {});
    // One pending promise for every caller (one listener pair, however many waiters subscribe).
    let next: Promise<void> | undefined;
    const ready = (): Promise<void> => {
      if (client.status === 'ready' || client.status === 'end') return Promise.resolve();
      next ??= new Promise<void>((resolve) => {
        const done = (): void => {
          next = undefined;
          client.off?.('ready', done);
          client.off?.('end', done);
          resolve();
        };
        client.on('ready', done);
        client.on('end', done);
      });
      return next;
    };
    return { client, ready };
  });
}

/**
 * relock's commands written to the socket and not answered yet. With `autoResendUnfulfilledCommands: false`
 * ioredis drops the commands in flight when the connection closes, leaving their promises pending: relock
 * rejects them itself on `'close'`, as ambiguous ("Connection is closed."), instead of waiting out
 * `responseTimeout`. Commands queued while the client was offline are left alone: they are still sent.
 */
class InFlight {
  private readonly pending = new Set<(error: Error) => void>();
  /** `reply` of a command just sent on `client`: tracked when it went to the socket (the client was ready), not to the offline queue. */
  track(client: { readonly status: string }, reply: Promise<unknown>): Promise<unknown> {
    if (client.status !== 'ready') return reply;
    return new Promise((resolve, reject) => {
      this.pending.add(reject);
      reply.then(resolve, reject).finally(() => this.pending.delete(reject));
    });
  }
  readonly abandon = (): void => {
    const error = new Error('Connection is closed.');
    for (const reject of this.pending) reject(error);
    this.pending.clear();
  };
}

/** Channel → listeners, with one Redis subscription per channel that has any. */
class Listeners {
  private readonly byChannel = new Map<string, Set<MessageListener>>();
  readonly dispatch = (channel: unknown, message: unknown): void => {
    for (const listener of this.byChannel.get(String(channel)) ?? []) listener(String(message), String(channel));
  };
  /** Adds `listener`; true when it is the channel's first (subscribe now). */
  add(channel: string, listener: MessageListener): boolean {
    const set = this.byChannel.get(channel);
    if (set) return void set.add(listener), false;
    this.byChannel.set(channel, new Set([listener]));
    return true;
  }
  /** Removes `listener`; true when it was the channel's last (unsubscribe now). */
  remove(channel: string, listener: MessageListener): boolean {
    const set = this.byChannel.get(channel);
    if (!set?.delete(listener) || set.size > 0) return false;
    this.byChannel.delete(channel);
    return true;
  }
  has(channel: string): boolean {
    return this.byChannel.has(channel);
  }
  channels(): string[] {
    return [...this.byChannel.keys()];
  }
}

/**
 * After an (S)UNSUBSCRIBE of `channel` failed (Redis refused it: BUSY, LOADING): ioredis still has the
 * channel subscribed and subscribes it again after a reconnect, so `listener` is put back (unless a new
 * one came meanwhile, which keeps the subscription anyway; `also` then restores what else goes with it) and
 * `error` rethrown: the caller's retry of
 * `unsubscribe(channel, listener)` then sends it again (see `Channels`).
 */
function restoreListener(listeners: Listeners): (channel: string, listener: MessageListener, error: unknown, also?: () => void) => never {
  return (channel, listener, error, also) => {
    if (!listeners.has(channel)) {
      listeners.add(channel, listener);
      also?.();
    }
    throw error;
  };
}

/**
 * The connection relock sends through: your client when re-sending is off on it and it has no
 * `keyPrefix`, else one `duplicate()` of it with those changed (see `ioredis`). `safe` says whether the
 * client is already so configured; `unprefixed` makes the duplicate.
 */
function commandClient<T extends IoRedis | IoCluster>(client: T, safe: boolean, duplicate: () => T, onError: ErrorSink): { commands: T; owned: boolean } {
  if (safe && !client.options?.keyPrefix) return { commands: client, owned: false };
  const commands = outsideContexts(duplicate);
  commands.on('error', (e) => onError(e, 'command'));
  return { commands, owned: true };
}

/**
 * The user's client (or Cluster) closed by its owner: its `'end'` (after `quit()`, `disconnect()`, or when
 * it stops reconnecting). relock's own connections on it (its duplicate for commands, its subscribers) are
 * closed too (`closeOwn`), and nothing is sent afterwards: calls reject with `ClientClosedError`. Without
 * it, relock's duplicate went on serving a waiter, which acquired the lock 4.7 s after the user's
 * `quit()` (issue 27). Without a client (one relock opened itself for a `url`), it never fires.
 */
class UserClose extends Once {
  private readonly onEnd: (() => void) | undefined;
  constructor(private readonly client?: EventSource, closeOwn?: () => void) {
    super();
    if (!client) return;
    this.onEnd = () => {
      this.fire();
      closeOwn?.();
    };
    client.on('end', this.onEnd);
  }
  error(): ClientClosedError {
    return new ClientClosedError({ client: 'ioredis/iovalkey' });
  }
  refuse(): Promise<never> {
    return Promise.reject(this.error());
  }
  /** Stops listening (the connection is closed). */
  off(): void {
    if (this.onEnd) this.client?.off?.('end', this.onEnd);
  }
}

async function closeOwned(client: IoRedis | IoCluster): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
  else client.disconnect();
}

function standaloneConnection(client: IoRedis, onError: ErrorSink, ownsClient = false): Connection {
  const { commands, owned } = ownsClient
    ? { commands: client, owned: true }
    : commandClient(client, client.options?.autoResendUnfulfilledCommands === false, () => client.duplicate({ keyPrefix: '', autoResendUnfulfilledCommands: false, disconnectTimeout: OWNED_DISCONNECT_TIMEOUT_MS }), onError);
  // A client relock owns starts connecting now; commands wait for that instead of failing while it is
  // offline, until it connects or reports its first error (then the caller's retry policy decides).
  let connecting: Promise<unknown> | undefined = ownsClient ? outsideContexts(() => client.connect()) : undefined;
  connecting?.catch(() => {});
  const connectError = ownsClient ? new NextEvent(client, 'error') : undefined;
  const send = (args: readonly string[]): Promise<unknown> => {
    if (userClosed.fired) return userClosed.refuse();
    if (connecting !== undefined) {
      if (client.status === 'ready') connecting = undefined;
      else return Promise.race([connecting, connectError!.next()]).then(() => inFlight.track(commands, call(commands, args)));
    }
    return inFlight.track(commands, call(commands, args));
  };
  const inFlight = new InFlight();
  commands.on('close', inFlight.abandon);
  const reconnected = new Notifier();
  const onCommandReady = reconnected.afterFirst(commands.status === 'ready');
  commands.on('ready', onCommandReady);
  const listeners = new Listeners();
  const restore = restoreListener(listeners);
  let subscriber: Subscriber | undefined;
  let closed = false;
  const userClosed = ownsClient
    ? new UserClose()
    : new UserClose(client, () => {
        subscriber?.client.disconnect();
        if (owned) void closeOwned(commands);
      });
  const getSubscriber = (): Subscriber => {
    if (userClosed.fired) throw userClosed.error();
    // None after close(): it would reconnect forever, with nobody to close it.
    if (closed) throw new Error('Connection is closed.');
    if (!subscriber) {
      subscriber = subscriberOf(client, onError, reconnected);
      subscriber.client.on('message', listeners.dispatch);
    }
    return subscriber;
  };
  return {
    topology: client.options?.sentinels ? 'sentinel' : 'standalone',
    family: 'ioredis/iovalkey',
    clientKeyPrefix: ownsClient ? undefined : client.options?.keyPrefix || undefined,
    offline: () => commands.status !== 'ready',
    publishCommand: 'publish',
    send: (_firstKey, args) => send(args),
    sendKeyless: (_slotKey, args) => send(args),
    async subscribe(channel, listener) {
      if (!listeners.add(channel, listener)) return;
      const sub = getSubscriber();
      await sub.ready();
      await sub.client.subscribe(channel);
    },
    async unsubscribe(channel, listener) {
      if (!listeners.remove(channel, listener) || !subscriber) return;
      const sub = subscriber;
      await sub.ready();
      if (sub.client.status !== 'end') await sub.client.unsubscribe(channel).catch((error: unknown) => restore(channel, listener, error));
    },
    onReconnected: reconnected.add,
    onClosed: userClosed.add,
    async close() {
      closed = true;
      userClosed.off();
      commands.off?.('ready', onCommandReady);
      commands.off?.('close', inFlight.abandon);
      subscriber?.client.disconnect();
      if (owned) await closeOwned(commands);
    },
  };
}

/** `host:port` of a node, as ioredis keys its slot table. */
const nodeKey = (node: IoRedis): string => `${node.options.host ?? '127.0.0.1'}:${node.options.port ?? 6379}`;

/** The primary serving `slot` (waiting for ioredis's slot table when it has none yet). */
async function slotPrimary(commands: IoCluster, slot: number): Promise<IoRedis> {
  if (commands.slots[slot] === undefined) await commands.call('PING');
  const key = commands.slots[slot]?.[0];
  const node = key === undefined ? undefined : commands.nodes('master').find((n) => nodeKey(n) === key);
  if (!node) throw new Error(`CLUSTERDOWN no known primary serves slot ${slot} yet`);
  return node;
}

function clusterConnection(cluster: IoCluster, onError: ErrorSink): Connection {
  const nodeOptions = cluster.options?.redisOptions as { autoResendUnfulfilledCommands?: boolean } | undefined;
  const { commands, owned } = commandClient(
    cluster,
    cluster.options?.retryDelayOnFailover === 0 && nodeOptions?.autoResendUnfulfilledCommands === false,
    () => cluster.duplicate(undefined, { keyPrefix: '', retryDelayOnFailover: 0, redisOptions: { ...nodeOptions, keyPrefix: '', autoResendUnfulfilledCommands: false, disconnectTimeout: OWNED_DISCONNECT_TIMEOUT_MS } }),
    onError,
  );
  const reconnected = new Notifier();
  const listeners = new Listeners();
  const restore = restoreListener(listeners);
  /** Primary `host:port` → relock's sharded subscriber on it; channel → the primary it is subscribed on. */
  const subscribers = new Map<string, Subscriber>();
  const homes = new Map<string, string>();
  const primaryOf = (slot: number): Promise<IoRedis> => slotPrimary(commands, slot);
  let closed = false;
  const userClosed = new UserClose(cluster, () => {
    for (const sub of subscribers.values()) sub.client.disconnect();
    if (owned) void closeOwned(commands);
  });
  const subscriberFor = (node: IoRedis): Subscriber => {
    if (userClosed.fired) throw userClosed.error();
    // None after close(): it would reconnect forever, with nobody to close it.
    if (closed) throw new Error('Connection is closed.');
    const key = nodeKey(node);
    let sub = subscribers.get(key);
    if (!sub) {
      sub = subscriberOf(node, onError, reconnected);
      sub.client.on('smessage', listeners.dispatch);
      subscribers.set(key, sub);
    }
    return sub;
  };
  /** SUNSUBSCRIBE of `channel` on `sub` once it is ready (nothing when it ended: closed). */
  const leave = async (sub: Subscriber, channel: string): Promise<void> => {
    await sub.ready();
    if (sub.client.status !== 'end') await sub.client.sunsubscribe(channel);
  };
  const home = async (channel: string): Promise<void> => {
    const node = await primaryOf(keySlot(channel));
    const sub = subscriberFor(node);
    homes.set(channel, nodeKey(node));
    await sub.ready();
    await sub.client.ssubscribe(channel);
    // Unsubscribed while this was under way: the SUNSUBSCRIBE found no home yet, so send it now.
    if (!listeners.has(channel)) await leave(sub, channel);
  };
  /** After ioredis refreshed its slot table: moves each channel whose slot changed primary, then wakes the waiters. */
  const rehome = (): void => {
    let moved = false;
    for (const channel of listeners.channels()) {
      const now = commands.slots[keySlot(channel)]?.[0];
      const before = homes.get(channel);
      if (now === undefined || now === before) continue;
      moved = true;
      const left = before === undefined ? undefined : subscribers.get(before);
      if (left) leave(left, channel).catch(() => {});
      home(channel).catch((e: unknown) => onError(e, 'subscriber'));
    }
    if (moved) reconnected.notify();
  };
  commands.on('refresh', rehome);
  commands.on('+node', reconnected.notify);
  commands.on('-node', reconnected.notify);

  return {
    topology: 'cluster',
    family: 'ioredis/iovalkey',
    clientKeyPrefix: cluster.options?.keyPrefix || undefined,
    offline: () => false,
    publishCommand: 'spublish',
    send: (_firstKey, args) => (userClosed.fired ? userClosed.refuse() : call(commands, args)),
    sendKeyless: async (slotKey, args) => (userClosed.fired ? userClosed.refuse() : call(await primaryOf(keySlot(slotKey)), args)),
    async subscribe(channel, listener) {
      if (listeners.add(channel, listener)) await home(channel);
    },
    async unsubscribe(channel, listener) {
      if (!listeners.remove(channel, listener)) return;
      const home = homes.get(channel);
      homes.delete(channel);
      const sub = subscribers.get(home ?? '');
      if (sub) await leave(sub, channel).catch((error: unknown) => restore(channel, listener, error, () => homes.set(channel, home!)));
    },
    onReconnected: reconnected.add,
    onClosed: userClosed.add,
    async close() {
      closed = true;
      userClosed.off();
      commands.off?.('refresh', rehome);
      commands.off?.('+node', reconnected.notify);
      commands.off?.('-node', reconnected.notify);
      for (const sub of subscribers.values()) sub.client.disconnect();
      if (owned) await closeOwned(commands);
    },
  };
}
