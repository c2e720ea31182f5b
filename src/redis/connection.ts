import { InvalidArgumentError, type ClosedClient } from '../errors.js';

/** The kind of deployment relock talks to through the user's client. */
export type Topology = 'standalone' | 'cluster' | 'sentinel';

/** A pub/sub message listener: `(message, channel)`. */
export type MessageListener = (message: string, channel: string) => void;

/**
 * What relock needs from Redis: raw commands routed by their first key, and pub/sub. One instance per
 * `LockClient`, built by the adapter of the user's client family (src/redis/clients/). Commands are sent
 * raw, without the client's per-command timeouts (relock keeps its own deadlines) and without reply
 * transformations, so replies always have the same shape; the client's own `keyPrefix` does not apply to
 * them (see `LockClientOptions.keyPrefix`).
 */
export interface Connection {
  readonly topology: Topology;
  /**
   * The user's client as `ClientClosedError` names it once its owner closed it: the family and how it is
   * closed (`'node-redis'`, `'ioredis/iovalkey'`, `'Valkey GLIDE'`; see `ClientClosedError.client`).
   */
  readonly family: ClosedClient;
  /** The `keyPrefix` the user's client was created with, if any. */
  readonly clientKeyPrefix: string | undefined;
  /** `'spublish'` on Redis Cluster (sharded pub/sub), `'publish'` elsewhere: the verb scripts publish with. */
  readonly publishCommand: 'publish' | 'spublish';
  /** Sends one command; `firstKey` routes it on a cluster. */
  send(firstKey: string | undefined, args: readonly string[]): Promise<unknown>;
  /**
   * Sends a command without keys (`WAIT`, `INFO`, `PUBSUB SHARDNUMSUB`) to the node serving `slotKey`:
   * on a cluster, the primary of its slot, on the connection that key's scripts use. (`send` would let
   * a client route it by the command's policy instead: `WAIT` to every shard, `PUBSUB` to any node.)
   */
  sendKeyless(slotKey: string, args: readonly string[]): Promise<unknown>;
  subscribe(channel: string, listener: MessageListener): Promise<void>;
  unsubscribe(channel: string, listener: MessageListener): Promise<void>;
  /**
   * `callback` runs each time a connection came back after a disconnect or the deployment's topology
   * changed (failover, slots moved): pub/sub messages may have been lost meanwhile and holds may be gone.
   */
  onReconnected(callback: () => void): void;
  /**
   * `callback` runs once when the user's client was closed by its owner (node-redis `close()`/`quit()`/
   * `destroy()`, ioredis `quit()`/`disconnect()`, GLIDE `close()`), or ended for good: no command is sent
   * through relock's own connections afterwards (they reject with `ClientClosedError`), and relock wakes
   * its waiters so that they reject instead of waiting on a client nobody can use. Never for a client
   * relock opened itself (a `url`), which only `close()` ends.
   */
  onClosed(callback: () => void): void;
  /**
   * True while the command connection is down and the client queues commands instead of sending them
   * (its offline queue: Redis unreachable, or reconnecting): an attempt in flight then is given up at the
   * end of its caller's wait time (see `RunOptions.deadline`). Always false on a cluster, whose per-node
   * state is not tracked here.
   */
  offline(): boolean;
  /** Closes the connections relock created; leaves a user-supplied client open. */
  close(): Promise<void>;
}

/** Called with errors the connections emit (clients require an `'error'` listener). */
export type ErrorSink = (error: unknown, source: 'command' | 'subscriber') => void;

/**
 * One client family (node-redis, ioredis/iovalkey, GLIDE) behind `Connection`. src/redis/clients/index.ts
 * asks each adapter in turn whether it recognises the user's object; the first that does builds the
 * connection. Adapters recognise by shape only: no `instanceof`, no import of the client's package.
 */
export interface ClientAdapter {
  /** The family's name as users know it, for error messages (`'node-redis'`, `'ioredis'`). */
  readonly family: string;
  /** Whether `client` carries this family's distinguishing marks (a cheap check; `open` checks the rest). */
  recognises(client: object): boolean;
  /** Builds the connection over the user's `client`; throws `InvalidArgumentError` naming what it lacks. */
  open(client: object, onError: ErrorSink): Connection;
}

export interface ConnectionOptions {
  /** The user's client (left open by `close()`). */
  redis?: unknown;
  /** A Redis URL; relock creates and owns its connections. */
  url?: string;
  /** Called with errors the connections emit. */
  onError: ErrorSink;
}

/** An object that emits events (every supported client does). */
export interface EventSource {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off?(event: string, listener: (...args: unknown[]) => void): unknown;
}

/** Whether `value[method]` is a function. */
export const has = (value: unknown, method: string): boolean =>
  typeof (value as Record<string, unknown> | null)?.[method] === 'function';

/**
 * Throws `InvalidArgumentError` when `client` lacks any of `methods`, naming the family and topology that
 * were recognised, what is missing, and what to pass instead (`hint`).
 */
export function requireMethods(client: object, recognised: string, methods: readonly string[], hint: string): void {
  const missing = methods.filter((m) => !has(client, m));
  if (missing.length > 0) throw new InvalidArgumentError('redis', `recognised a ${recognised} but it lacks ${missing.join(', ')}: ${hint}`);
}

/**
 * What is wrong with `url` as a Redis URL (`redis://`, `rediss://` or `unix://`), or undefined when
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

/** A promise that rejects with the next `event` of `source` (one listener however many callers wait). */
export class NextEvent {
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

/** Callbacks run once, when the user's client was closed (see `Connection.onClosed`). */
export class Once {
  private callbacks: Array<() => void> | undefined = [];
  /** Whether it fired. */
  get fired(): boolean {
    return this.callbacks === undefined;
  }
  /** Adds `callback` (run at once when it fired already). */
  readonly add = (callback: () => void): void => {
    if (this.callbacks) this.callbacks.push(callback);
    else callback();
  };
  readonly fire = (): void => {
    const callbacks = this.callbacks ?? [];
    this.callbacks = undefined;
    for (const callback of callbacks) callback();
  };
}

/** Callbacks run when a connection is back or the topology changed. */
export class Notifier {
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
