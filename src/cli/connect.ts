import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { createLockClient, type LockClient } from '../client.js';
import { RelockError } from '../errors.js';
import { redisUrlProblem, type Connection } from '../redis/connection.js';
import { openConnection } from '../redis/clients/index.js';
import { CliError, usageError } from './errors.js';
import type { CommonOptions } from './options.js';

/** A command sender bound to one primary (for `SCAN`, which walks one node's keys). */
export interface NodeCommands {
  /** `host:port` of the node. */
  readonly address: string;
  send(args: readonly string[]): Promise<unknown>;
}

/** What a command works with: raw commands and pub/sub through relock's own adapter, and a `LockClient`. */
export interface Target {
  /** Raw commands routed by their first key, and pub/sub (`SSUBSCRIBE` on a cluster). */
  readonly connection: Connection;
  /** A lock client with `--prefix` as its `keyPrefix`: key names come from it, `force-unlock` goes through it. */
  readonly locks: LockClient;
  /** Every primary: the node itself, or each primary of the cluster. */
  primaries(): Promise<NodeCommands[]>;
  /** `callback` runs with each error a connection reports after the first connect (a lost connection). */
  onError(callback: (error: unknown) => void): void;
  /** Shuts the lock client down and closes every connection. */
  close(): Promise<void>;
}

/** Milliseconds to wait for the TCP (or TLS) connection to a node. */
const CONNECT_TIMEOUT_MS = 5000;
/** Milliseconds to wait for the whole first connection (handshake and, on a cluster, its topology). */
const READY_TIMEOUT_MS = 15_000;

/**
 * node-redis, which the CLI talks to Redis through (an optional peer dependency of the library: a project
 * on ioredis or GLIDE may not have it). Imported when a command connects, so that `--help` works without
 * it: its core, `@redis/client`, found from where `redis` is installed (as `redis` itself requires it).
 * `redis` also loads its four module packages (Bloom, JSON, Search, time series), which the command
 * never uses and which took about 40 % of the CPU time of a command's start (docs/cli.md). Throws
 * `CliError` (exit 1) saying what to install when `redis` is missing.
 */
async function nodeRedis(): Promise<Pick<typeof import('redis'), 'createClient' | 'createCluster'>> {
  let core: string;
  try {
    core = createRequire(import.meta.resolve('redis')).resolve('@redis/client');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND' && (error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error;
    throw new CliError('the relock command talks to Redis through node-redis, which is not installed here: run `npm install redis` (the library itself also works with ioredis or Valkey GLIDE)');
  }
  return (await import(pathToFileURL(core).href)) as typeof import('redis');
}

/**
 * Connects to the Redis of `options` (`createClient`, or `createCluster` with `--cluster`) and resolves to
 * a `Target`. A connection that fails before the first `ready` is not retried; once connected, node-redis
 * reconnects (with at most 2 s between attempts) and re-subscribes. Throws `CliError` (exit 2) for a
 * malformed URL, `CliError` (exit 1) naming the URL when Redis cannot be reached or does not answer
 * within 15 s.
 */
export async function connect(options: CommonOptions): Promise<Target> {
  const url = checkUrl(options.url);
  let connected = false;
  /** The last error before the first connect: node-redis reports a cluster's failed root nodes only this way. */
  let early: unknown;
  const errorListeners: Array<(error: unknown) => void> = [];
  const onError = (error: unknown): void => {
    if (!connected) early = error;
    else for (const listener of errorListeners) listener(error);
  };
  const socket = {
    connectTimeout: CONNECT_TIMEOUT_MS,
    reconnectStrategy: (retries: number, cause: Error): number | Error => (connected ? Math.min(50 * 2 ** retries, 2000) : cause),
  };
  const cluster = options.cluster === true;
  const { createClient, createCluster } = await nodeRedis();
  const redis = cluster ? createCluster({ rootNodes: [{ url }], defaults: { ...credentials(url), socket } }) : createClient({ url, socket });
  redis.on('error', onError);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${READY_TIMEOUT_MS / 1000} s`)), READY_TIMEOUT_MS);
  });
  try {
    await Promise.race([redis.connect(), timeout]);
  } catch (error) {
    redis.destroy();
    throw connectError(url, cluster, early !== undefined && cluster ? new Error(`${messageOf(error)}: ${messageOf(early)}`) : error);
  } finally {
    clearTimeout(timer);
  }
  connected = true;
  const connection = openConnection({ redis, onError });
  // No OpenTelemetry: the command records nothing, and loading @opentelemetry/api (where installed) slowed its start.
  const locks = createLockClient({ redis, keyPrefix: options.prefix, otel: false });
  return {
    connection,
    locks,
    async primaries() {
      if (!('masters' in redis)) return [{ address: addressOf(url), send: (args) => redis.sendCommand(args) }];
      return Promise.all(
        redis.masters.map(async (node) => {
          const client = await redis.nodeClient(node);
          return { address: `${node.host}:${node.port}`, send: (args: readonly string[]) => client.sendCommand(args) };
        }),
      );
    },
    onError: (callback) => void errorListeners.push(callback),
    async close() {
      await locks.shutdown();
      await connection.close();
      await redis.close().catch(() => redis.destroy());
    },
  };
}

/** The URL if node-redis can use it, else a usage error. */
function checkUrl(url: string): string {
  const problem = redisUrlProblem(url);
  if (problem) throw usageError(`${problem} (--url or REDIS_URL)`);
  return url;
}

/** Credentials and TLS of the seed URL, for every cluster node (node-redis gives root-node options to no other node). */
function credentials(url: string): { username?: string; password?: string } {
  const { username, password } = new URL(url);
  return { ...(username ? { username: decodeURIComponent(username) } : {}), ...(password ? { password: decodeURIComponent(password) } : {}) };
}

function addressOf(url: string): string {
  const { host } = new URL(url);
  return host || url;
}

/** The error to report when the first connection failed. */
function connectError(url: string, cluster: boolean, error: unknown): CliError {
  const reason = messageOf(error);
  if (cluster && /cluster support disabled/i.test(reason)) return new CliError(`${url} is not a Redis Cluster node (${reason}); drop --cluster`);
  return new CliError(`cannot connect to ${cluster ? 'the Redis Cluster at ' : 'Redis at '}${url}: ${reason}. Set REDIS_URL or pass --url redis://host:port${cluster ? '' : ' (and --cluster for a cluster)'}`);
}

/** A one-line description of `error`, with the causes node-redis nests. */
export function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const nested = (error as { originalError?: unknown }).originalError ?? error.cause;
  const own = error.message || error.name;
  return nested instanceof Error && nested.message && !own.includes(nested.message) ? `${own}: ${nested.message}` : own;
}

/**
 * Turns an error thrown while a command ran into the `CliError` to report: bad names are usage errors,
 * `MOVED` without `--cluster` suggests it, everything else is a failure naming the URL.
 */
export function commandError(error: unknown, options: CommonOptions): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof RelockError && (error.code === 'INVALID_ARGUMENT' || error.code === 'CROSS_SLOT')) return usageError(error.message);
  const reason = messageOf(error);
  if (error instanceof TypeError || error instanceof ReferenceError || error instanceof RangeError) return new CliError(`internal error: ${error.stack ?? reason}`);
  if (/^MOVED|^ASK /.test(reason) && !options.cluster) return new CliError(`${options.url} is a Redis Cluster node (${reason}); add --cluster`);
  return new CliError(`Redis at ${options.url} failed: ${reason}`);
}
