/**
 * The `Connection` for Valkey GLIDE 2 (`@valkey/valkey-glide`): a user's `GlideClient` or
 * `GlideClusterClient`, recognised by shape. relock never imports GLIDE: the subscriber it opens is made
 * with the user's client's own class (`client.constructor.createClient`).
 *
 * GLIDE's traits, and what relock does about them:
 * - Raw commands go through `customCommand`. On a cluster every command is routed explicitly with
 *   `{ route: { type: 'primarySlotKey', key } }`: scripts by their first key, keyless commands (`WAIT`,
 *   `PUBSUB SHARDNUMSUB`) by the slot key they are about. GLIDE follows MOVED/ASK itself; what it gives up
 *   on reaches relock as the Redis reply (`MOVED …`, `TRYAGAIN …`) and is retried as transient.
 * - Replies are RESP3 (GLIDE's default): maps come back as `[{ key, value }]` and sets as `Set`, which
 *   relock flattens to the RESP2 shapes its scripts and checks read. GLIDE reformats server errors
 *   (`WRONGTYPE: x`, `… - NoScriptError: x`); relock restores the wire form (`WRONGTYPE x`, `NOSCRIPT x`).
 * - Pub/sub: a GLIDE client delivers messages either to the callback fixed at its creation or to a queue
 *   (`getPubSubMessage`) that belongs to its user, so relock never subscribes the user's client. It opens
 *   one subscriber of its own, on the user's client's configuration with an empty subscription set and a
 *   message callback, and adds channels to it with GLIDE 2's dynamic `subscribe` (`ssubscribe`, sharded,
 *   on a cluster). GLIDE keeps those subscriptions across reconnects and slot moves. A GLIDE without
 *   dynamic subscription (before 2.x's `subscribe`) makes `subscribe` reject: relock then waits by polling
 *   capped by the lock's TTL and logs a warning (see `Channels.join`).
 * - Errors: `ClosingError` (the user closed their client) is `closed`; `ConnectionError` (the connection
 *   dropped with the command possibly sent) is ambiguous; GLIDE's `TimeoutError` (no reply within the
 *   client's `requestTimeout`, 250 ms by default) becomes relock's `ResponseTimeoutError` (ambiguous).
 * - Reconnects: GLIDE emits no connection events, and reconnects in the background (its
 *   `connectionBackoff`: by default at once, then after 200, 400, 800, 1,600 and then every 3,200 ms,
 *   ±20 %). relock reads GLIDE's own count of open connections (`getStatistics().total_connections`, a
 *   local call that sends nothing, process-wide: GLIDE decrements it when a connection drops and
 *   increments it when one is made) every `WATCH_MS` (50 ms): when it rose, a connection came back (or
 *   another GLIDE client was made: one early renewal round, harmless), and relock reports a reconnect,
 *   which renews every hold at once and wakes the waiters. Without that a holder whose key a restart
 *   erased learned it at its next renewal, up to a watchdog interval later (8.8 s with the 30 s default
 *   lease), and a waiter slept until its fallback timer (29.5 s). relock also reports one after a command
 *   failed with `ConnectionError` or `TimeoutError` (what commands get while GLIDE reconnects; a merely
 *   slow reply costs one early renewal round) and a later one succeeded, and when its subscriber's
 *   confirmed subscriptions fell short of the wanted ones and came back (checked every second while it
 *   has subscriptions).
 * - In-flight limit: GLIDE refuses a request past its `inflightRequestsLimit` (1,000 by default) unsent.
 *   relock keeps its own commands within that limit (`InFlightGate`): past it they wait for a slot in
 *   arrival order, so a burst of relock calls is never refused; a refusal the user's own commands cause
 *   is retried as transient.
 * - The user's `close()`: seen within `WATCH_MS` (`isClosed`); relock then wakes its waiters, whose
 *   next attempt fails with `ClientClosedError` (GLIDE's `ClosingError`), and closes its subscriber.
 * - `close()` closes relock's subscriber and leaves the user's client open.
 */
import { ClientClosedError } from '../../errors.js';
import { outsideContexts } from '../../context.js';
import { ResponseTimeoutError } from '../failures.js';
import { InFlightGate } from './inflight-gate.js';
import { has, Notifier, Once, requireMethods, type ClientAdapter, type Connection, type ErrorSink, type MessageListener } from '../connection.js';

/** A GLIDE pub/sub message as the subscriber's callback gets it. */
interface GlideMessage {
  message: unknown;
  channel: unknown;
}
/** `customCommand`'s options: a route on a cluster, and the reply decoder. */
type CommandOptions = { route?: { type: 'primarySlotKey'; key: string }; decoder: number };
/**
 * GLIDE's `Decoder.String` (an enum: 0 bytes, 1 string), passed with every command so that a client
 * created with `defaultDecoder: Decoder.Bytes` still answers relock with strings.
 */
const STRING_DECODER = 1;
/** GLIDE's default `inflightRequestsLimit`, for a client that does not show its own. */
const DEFAULT_INFLIGHT_LIMIT = 1000;
/** The members of `GlideClient` / `GlideClusterClient` relock uses. */
interface GlideLike {
  customCommand(args: string[], options?: CommandOptions): Promise<unknown>;
  /** The most requests the client keeps in flight (its `inflightRequestsLimit` option); it refuses more. */
  readonly inflightRequestsLimit?: number;
  close(errorMessage?: string): void;
  subscribe?(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  unsubscribe?(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  ssubscribe?(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  sunsubscribe?(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  getSubscriptions?(): Promise<{ desiredSubscriptions: Record<number, Set<unknown>>; actualSubscriptions: Record<number, Set<unknown>> }>;
  /** GLIDE core's counters, process-wide (values are decimal strings): `total_connections` is read. */
  getStatistics?(): object;
  /** Set by the client's `close()`. */
  readonly isClosed?: boolean;
  /** GLIDE keeps the configuration the client was created with (a protected field). */
  readonly config?: Record<string, unknown>;
}
interface GlideClass {
  createClient(config: Record<string, unknown>): Promise<GlideLike>;
}

/** Milliseconds GLIDE may take to confirm a SUBSCRIBE or UNSUBSCRIBE before it rejects. */
const SUBSCRIBE_TIMEOUT_MS = 10_000;
/** How often the subscriber's confirmed subscriptions are compared with the wanted ones. */
const SUBSCRIPTION_CHECK_MS = 1_000;
/** How often GLIDE's connection count and the user's client's `isClosed` are read (see `GlideWatch`). */
export const WATCH_MS = 50;
const HINT = 'pass a GlideClient or GlideClusterClient from "@valkey/valkey-glide" 2.x';

/**
 * Valkey GLIDE 2: `GlideClient` (standalone) and `GlideClusterClient` (recognised by `fcallWithRoute`, on
 * the cluster client only in every GLIDE release). Recognised by `customCommand` with `getPubSubMessage`,
 * which no other supported client has.
 */
export const glide: ClientAdapter = {
  family: 'Valkey GLIDE',
  recognises: (client) => has(client, 'customCommand') && has(client, 'getPubSubMessage'),
  open(client, onError) {
    const clustered = has(client, 'fcallWithRoute');
    requireMethods(client, clustered ? 'Valkey GLIDE cluster client' : 'Valkey GLIDE client', ['close'], HINT);
    requireMethods(client.constructor ?? {}, clustered ? 'Valkey GLIDE cluster client' : 'Valkey GLIDE client', ['createClient'], `its class has no static createClient: ${HINT}`);
    return glideConnection(client as GlideLike, clustered, onError);
  },
};

function glideConnection(user: GlideLike, clustered: boolean, onError: ErrorSink): Connection {
  const reconnected = new Notifier();
  const closed = new Once();
  let dropped = false;
  // relock's commands wait for a slot under the client's own limit instead of being refused past it.
  const gate = new InFlightGate(user.inflightRequestsLimit ?? DEFAULT_INFLIGHT_LIMIT);
  const run = (args: readonly string[], key: string | undefined): Promise<unknown> => {
    const slot = gate.enter();
    return slot === undefined ? sendNow(args, key) : slot.then(() => sendNow(args, key));
  };
  /** Sends `args` (routed by `key` on a cluster) holding a slot of `gate`, given back once it settles. */
  const sendNow = (args: readonly string[], key: string | undefined): Promise<unknown> => {
    const command = [...args];
    let reply: Promise<unknown>;
    try {
      reply = user.customCommand(command, clustered && key !== undefined ? { route: { type: 'primarySlotKey', key }, decoder: STRING_DECODER } : { decoder: STRING_DECODER });
    } catch (error) {
      gate.leave();
      return Promise.reject(glideError(error));
    }
    return reply.then(
      (value) => {
        gate.leave();
        if (dropped) {
          dropped = false;
          reconnected.notify();
        }
        return flatten(value);
      },
      (error: unknown) => {
        gate.leave();
        // While GLIDE reconnects, commands fail with ConnectionError or wait out requestTimeout
        // (TimeoutError): either may mean a dropped connection, so the next success reports a reconnect.
        const kind = (error as Error | null)?.constructor?.name;
        if (kind === 'ConnectionError' || kind === 'TimeoutError') dropped = true;
        throw glideError(error);
      },
    );
  };
  const subscriber = new GlideSubscriber(user, clustered, reconnected.notify, (error) => onError(error, 'subscriber'));
  const watch = new GlideWatch(user, reconnected.notify, () => {
    closed.fire();
    void subscriber.close();
  });
  subscriber.opening = (client) => watch.settleAfter(client);
  return {
    topology: clustered ? 'cluster' : 'standalone',
    family: 'Valkey GLIDE',
    clientKeyPrefix: undefined,
    publishCommand: clustered ? 'spublish' : 'publish',
    // GLIDE exposes no connection state; its own request timeout bounds a command sent while it reconnects.
    offline: () => false,
    send: (firstKey, args) => run(args, firstKey),
    sendKeyless: (slotKey, args) => run(args, slotKey),
    subscribe: (channel, listener) => subscriber.add(channel, listener),
    unsubscribe: (channel, listener) => subscriber.remove(channel, listener),
    onReconnected: reconnected.add,
    onClosed: closed.add,
    close: () => {
      watch.stop();
      return subscriber.close();
    },
  };
}

/**
 * Watches, every `WATCH_MS` on an unref()ed timer, what GLIDE shows of its connections without events:
 * its count of open connections (`getStatistics().total_connections`, process-wide), whose rise means a
 * connection was made (a reconnect: `onReconnected`), and the user's client's `isClosed` (`onClosed`,
 * once; the watch then stops). Both are local reads: nothing is sent to Redis. A GLIDE without
 * `getStatistics` is watched for `isClosed` only.
 */
class GlideWatch {
  private readonly timer: NodeJS.Timeout;
  private count: number;
  /** Connections relock itself is opening (its subscriber): their rise is not a reconnect. */
  private opening = 0;

  constructor(
    private readonly user: GlideLike,
    private readonly onReconnected: () => void,
    private readonly onClosed: () => void,
  ) {
    this.count = this.connections();
    this.timer = outsideContexts(() => setInterval(() => this.check(), WATCH_MS));
    this.timer.unref();
  }

  /** While `client` (a connection relock opens) is being made, a rise of the count is not reported; the count is read again once it is. */
  settleAfter<T>(client: Promise<T>): void {
    this.opening++;
    const done = (): void => {
      this.opening--;
      this.count = this.connections();
    };
    client.then(done, done);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    if (this.user.isClosed === true) {
      this.stop();
      this.onClosed();
      return;
    }
    const count = this.connections();
    const rose = count > this.count;
    this.count = count;
    if (rose && this.opening === 0) this.onReconnected();
  }

  /** GLIDE's count of open connections in this process (0 when it does not say). */
  private connections(): number {
    const statistics = this.user.getStatistics?.() as { total_connections?: unknown } | undefined;
    return Number(statistics?.total_connections ?? 0) || 0;
  }
}

/**
 * relock's own GLIDE subscriber: made on first use with the user's client's class and configuration
 * (RESP3, an empty subscription set, a message callback), channels added and removed dynamically.
 */
class GlideSubscriber {
  private readonly listeners = new Map<string, MessageListener>();
  private client: Promise<GlideLike> | undefined;
  private checker: NodeJS.Timeout | undefined;
  private short = false;
  private closed = false;
  /** Told of each connection relock's subscriber is being made with (so that its rise is not taken for a reconnect). */
  opening: ((client: Promise<unknown>) => void) | undefined;

  constructor(
    private readonly user: GlideLike,
    private readonly clustered: boolean,
    private readonly onReconnected: () => void,
    private readonly onError: (error: unknown) => void,
  ) {}

  async add(channel: string, listener: MessageListener): Promise<void> {
    const verb = this.clustered ? 'ssubscribe' : 'subscribe';
    if (!has(this.user, verb)) {
      throw new Error(`this Valkey GLIDE client has no dynamic ${verb} (an early GLIDE 2): relock waits by polling, capped by the lock's TTL; upgrade @valkey/valkey-glide`);
    }
    this.listeners.set(channel, listener);
    const client = await this.open();
    try {
      await client[verb]!([channel], SUBSCRIBE_TIMEOUT_MS).catch((error: unknown) => {
        throw glideError(error);
      });
    } catch (error) {
      if (this.listeners.get(channel) === listener) this.listeners.delete(channel);
      throw error;
    }
    this.check();
  }

  async remove(channel: string, listener: MessageListener): Promise<void> {
    if (this.listeners.get(channel) !== listener) return;
    this.listeners.delete(channel);
    if (!this.client) return;
    const client = await this.client;
    await client[this.clustered ? 'sunsubscribe' : 'unsubscribe']!([channel], SUBSCRIBE_TIMEOUT_MS).catch((error: unknown) => {
      throw glideError(error);
    });
    if (this.listeners.size === 0) this.stopChecking();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopChecking();
    const subscribed = this.listeners.size > 0;
    this.listeners.clear();
    const opening = this.client;
    this.client = undefined;
    const client = await opening?.catch(() => undefined);
    // Channels still subscribed (a caller that did not leave them): dropped first, so that GLIDE's
    // subscription synchronizer does not try to restore them on a closed client.
    if (subscribed) await client?.[this.clustered ? 'sunsubscribe' : 'unsubscribe']?.(null, SUBSCRIBE_TIMEOUT_MS).catch(() => {});
    client?.close();
  }

  private open(): Promise<GlideLike> {
    if (!this.client) {
      const { protocol: _resp2Refused, pubsubSubscriptions: _users, ...config } = this.user.config ?? {};
      const callback = (msg: GlideMessage): void => {
        const channel = String(msg.channel);
        this.listeners.get(channel)?.(String(msg.message), channel);
      };
      const ctor = this.user.constructor as unknown as GlideClass;
      this.client = outsideContexts(() => ctor.createClient({ ...config, pubsubSubscriptions: { channelsAndPatterns: {}, callback } }));
      const opening = this.client;
      this.opening?.(opening);
      opening.then(
        (client) => {
          if (this.closed) client.close();
        },
        (error: unknown) => {
          if (this.client === opening) this.client = undefined;
          this.onError(error);
        },
      );
    }
    return this.client.then((client) => {
      if (this.closed) throw new ClientClosedError();
      return client;
    });
  }

  /** While channels are subscribed: reports a reconnect when confirmed subscriptions fell short and came back. */
  private check(): void {
    if (this.checker || this.closed) return;
    this.checker = outsideContexts(() =>
      setInterval(() => {
        void this.client
          ?.then((client) => client.getSubscriptions?.())
          .then((state) => {
            if (!state) return;
            const wanted = [...Object.values(state.desiredSubscriptions)].reduce((n, s) => n + s.size, 0);
            const confirmed = [...Object.values(state.actualSubscriptions)].reduce((n, s) => n + s.size, 0);
            if (confirmed < wanted) this.short = true;
            else if (this.short) {
              this.short = false;
              this.onReconnected();
            }
          })
          .catch(() => {});
      }, SUBSCRIPTION_CHECK_MS),
    );
    this.checker.unref();
  }

  private stopChecking(): void {
    if (this.checker) clearInterval(this.checker);
    this.checker = undefined;
  }
}

/** redis-rs error kinds (GLIDE's core) and the Redis reply codes they came from. */
const REPLY_CODES: Record<string, string> = {
  ResponseError: 'ERR',
  ExecAbortError: 'EXECABORT',
  BusyLoadingError: 'LOADING',
  NoScriptError: 'NOSCRIPT',
  Moved: 'MOVED',
  Ask: 'ASK',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
  ReadOnly: 'READONLY',
  NotBusy: 'NOTBUSY',
};
const SIGNALLED = /^An error was signalled by the server: - (\w+): ([\s\S]*)$/;
const CODED = /^([A-Z][A-Z0-9_-]*): ([\s\S]*)$/;

/**
 * A GLIDE failure as relock classifies it (`classify()` in failures.ts): server replies back in their
 * wire form (`NOSCRIPT …`, `WRONGTYPE …`), a request timeout as `ResponseTimeoutError`; `ClosingError`
 * and `ConnectionError` keep their class.
 */
export function glideError(error: unknown): unknown {
  if (typeof (error as Error | null)?.message !== 'string') return error;
  const e = error as Error;
  const kind = e.constructor?.name;
  if (kind === 'TimeoutError') return Object.assign(new ResponseTimeoutError(0), { message: `no reply from Redis within the GLIDE client's requestTimeout (${e.message})`, cause: e });
  if (kind !== 'RequestError') return e;
  const signalled = SIGNALLED.exec(e.message);
  const coded = signalled ? [REPLY_CODES[signalled[1]] ?? signalled[1], signalled[2]] : CODED.exec(e.message)?.slice(1);
  if (coded) e.message = `${coded[0]} ${coded[1]}`;
  return e;
}

/**
 * A RESP3 reply in the RESP2 shape relock reads: GLIDE's maps (`[{ key, value }]`) as flat
 * `[key, value, …]` arrays, sets as arrays, booleans as 1/0.
 */
export function flatten(reply: unknown): unknown {
  if (reply instanceof Set) return [...reply].map(flatten);
  if (typeof reply === 'boolean') return reply ? 1 : 0;
  if (!Array.isArray(reply)) return reply;
  const record = reply.length > 0 && reply.every((entry) => entry !== null && typeof entry === 'object' && !Array.isArray(entry) && 'key' in entry && 'value' in entry);
  if (record) return (reply as Array<{ key: unknown; value: unknown }>).flatMap((entry) => [flatten(entry.key), flatten(entry.value)]);
  return reply.map(flatten);
}
