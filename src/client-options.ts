/**
 * The options of `createLockClient` (`LockClientOptions`) and their check: every option is validated and
 * given its default here (`resolveOptions`), before the client opens anything.
 */
import type { Logger } from 'pino';
import { InvalidArgumentError } from './errors.js';
import { mainKey } from './keys.js';
import type { OtelOptions } from './observe/options.js';
import { optionKeys, refuseUnknownKeys } from './option-keys.js';
import { DEFAULT_RETRY, type RetryPolicy } from './redis/executor.js';
import type { ScriptingMode } from './redis/script.js';

/**
 * A node-redis client (v5 or v6): `createClient()` (connected), `createCluster()` or `createSentinel()`.
 * Typed loosely so that clients of both major versions are accepted; it is checked when the lock client is
 * created.
 */
export type NodeRedisClient = object;

/** Options of `createLockClient`. Every time is in milliseconds. */
export interface LockClientOptions {
  /**
   * Your connected node-redis client (standalone, cluster or sentinel), or a Valkey GLIDE 2 client
   * (`GlideClient`, `GlideClusterClient`). relock sends its commands through it and opens one extra
   * subscriber connection for waiting (node-redis: `duplicate()`; GLIDE: a client of the same class and
   * configuration, see docs/getting-started.md); `shutdown()` leaves your client open. Give this or `url`.
   */
  redis?: NodeRedisClient;
  /**
   * A Redis URL (`redis://user:pass@host:6379/0`, `rediss://…`): relock creates its own connections (with
   * the offline queue disabled, so no lock command runs late after a reconnect) and closes them in
   * `shutdown()`. The client library (node-redis if installed, else ioredis, else iovalkey) is imported on
   * the first call, within that call's `responseTimeout`. Give this or `redis`. With node-redis, a
   * connection waiting between reconnect attempts when `shutdown()` is called keeps the process alive
   * until that wait ends (node-redis's default strategy: up to 2.2 s; its wait cannot be cancelled): to
   * bound it, give your own client (`redis`) with a shorter `socket.reconnectStrategy`.
   */
  url?: string;
  /**
   * Lease of a lock taken without an explicit lease, in ms; the watchdog renews it every third of this
   * while the holder runs, and a dead holder's lock frees itself within it. Default 30000 (Redisson's
   * `lockWatchdogTimeout`). At least 100 (smaller values would lose every hold at
   * once: `InvalidArgumentError`); keep it at least 3 × `responseTimeout` (relock logs a warning below
   * that), so that a renewal without a reply is retried before the lease runs out.
   */
  lockWatchdogTimeout?: number;
  /**
   * Prepended to every key and channel relock uses (for example `'myapp:'`). Default: the `keyPrefix`
   * of the node-redis client given as `redis` (relock sends raw commands, which node-redis does not
   * prefix), else `''`. It may contain a hash tag (`'{app}:'`) to put every object in one cluster slot.
   */
  keyPrefix?: string;
  /** A pino (or pino-compatible) logger; relock logs through `logger.child({ component: 'relock' })`. Default: silent. */
  logger?: Logger;
  /** Backoff for transient Redis errors (p-retry options). Default `{ retries: 4, minTimeout: 50, maxTimeout: 1000, factor: 2, randomize: true }`. */
  retry?: Partial<RetryPolicy>;
  /** How long a waiter waits for its channel subscription before polling instead, in ms. Default 7500 (Redisson's `subscriptionTimeout`). */
  subscriptionTimeout?: number;
  /** How long to wait for one reply before treating the call as failed and retrying, in ms. Default 3000 (Redisson's `timeout`). */
  responseTimeout?: number;
  /** Most holds renewed by one watchdog script call. Default 100 (Redisson's `lockWatchdogBatchSize`). */
  watchdogBatchSize?: number;
  /**
   * Redisson's `checkLockSyncedSlaves`: after every acquisition, `WAIT` until at least one replica of the
   * key's primary acknowledged it (`timeout` ms, default 1000, Redisson's `slavesSyncTimeout`); when none
   * did, the acquisition is undone and retried per `retry`, then fails with `NoSyncedReplicasError`. This
   * narrows the window in which a failover hands one lock to two holders; it does not close it (a replica
   * that did not acknowledge can still be promoted). Costs one INFO every 5 s and one WAIT per acquisition
   * when the primary has replicas; nothing without replicas. `true` = `{ timeout: 1000 }`. Default off.
   */
  syncReplicas?:
    | boolean
    | {
        /** How long `WAIT` waits for a replica's acknowledgement, in ms. Default 1000 (Redisson's `slavesSyncTimeout`). */
        timeout?: number;
      };

  /**
   * How long a fair-lock waiter that stopped trying (its process died) keeps its place in the queue, in ms.
   * A live waiter refreshes its deadline, Redis server time + this, with every attempt and tries at least
   * every third of it, so it is never dropped however long it waits; a dead one holds the queue up for at
   * most this long. Default 300000 (Redisson's `fairLockWaitTimeout`); a few seconds suit most services.
   */
  fairLockWaitTimeout?: number;

  /**
   * OpenTelemetry metrics and spans (see docs/observability.md). When the optional peer dependency
   * `@opentelemetry/api` is installed, relock loads it (a dynamic `import()` when the client is created,
   * unless given as `api`) and records through the global meter and tracer, or through the providers
   * given here; metrics count from the first operation (those made while the import runs are buffered),
   * spans from the import's end (or from the first operation when `api` is given); without it, nothing is loaded. `false`: never load it, record nothing. Default `{}`
   * (global providers, span attribute `relock.name` on). The `relock:*` diagnostics channels work either
   * way. `createLockClient` throws `InvalidArgumentError` naming a field that is not as `OtelOptions` says.
   */
  otel?: false | OtelOptions;
  /**
   * How relock runs its Lua scripts (Redis 7+ for functions). `'eval'`: `EVALSHA`, and `EVAL` when the
   * server does not know a script yet (after a restart or failover). `'functions'`: relock's scripts as one
   * Redis Functions library `relock_<hash>` (the hash covers every script, so each relock version has its
   * own), loaded with `FUNCTION LOAD` on a node's first call that finds it missing (a fresh server, a
   * restart without persistence, a promoted replica that never received it; on a Cluster, each primary
   * lazily), then called with `FCALL`, or `FCALL_RO` for read-only scripts (flag `no-writes`). `'auto'`:
   * `'eval'` until the server refuses `EVALSHA` or `EVAL` to this user (an ACL `NOPERM`), then
   * `'functions'` for the rest of the client's life, logged once at warn level. Same semantics in every
   * mode. The ACL rule each mode needs is in docs/security.md; a refused command, key or channel throws
   * `PermissionError`. Default `'auto'`.
   */
  scripting?: ScriptingMode;
}

/** `LockClientOptions` checked, with their defaults filled in. */
export interface ResolvedOptions {
  lockWatchdogTimeout: number;
  subscriptionTimeout: number;
  responseTimeout: number;
  watchdogBatchSize: number;
  fairLockWaitTimeout: number;
  retry: RetryPolicy;
  syncReplicasTimeout: number | undefined;
  scripting: ScriptingMode;
}

/** The keys of `LockClientOptions` and of its nested objects (any other key is refused: `refuseUnknownKeys`). */
const CLIENT_KEYS = optionKeys<LockClientOptions>({
  redis: true, url: true, lockWatchdogTimeout: true, keyPrefix: true, logger: true, retry: true, subscriptionTimeout: true, responseTimeout: true,
  watchdogBatchSize: true, syncReplicas: true, fairLockWaitTimeout: true, otel: true, scripting: true,
});
const RETRY_KEYS = optionKeys<RetryPolicy>({ retries: true, minTimeout: true, maxTimeout: true, factor: true, randomize: true });
const OTEL_KEYS = optionKeys<OtelOptions>({ api: true, meterProvider: true, tracerProvider: true, recordNames: true });

/** Checks `options` (throws `InvalidArgumentError` naming the first bad one) and fills in the defaults. */
export function resolveOptions(options: LockClientOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object such as { url: "redis://localhost:6379" }');
  refuseNested(options);
  refuseUnknownKeys(options, CLIENT_KEYS);
  if (options.retry !== undefined) {
    if (options.retry === null || typeof options.retry !== 'object') throw new InvalidArgumentError('retry', 'must be an object such as { retries: 4 }');
    refuseUnknownKeys(options.retry, RETRY_KEYS, 'retry.');
  }
  if (options.redis !== undefined && options.url !== undefined) throw new InvalidArgumentError('options', 'give either `redis` or `url`, not both');
  if (options.keyPrefix !== undefined && typeof options.keyPrefix !== 'string') throw new InvalidArgumentError('keyPrefix', 'must be a string');
  if (options.logger !== undefined && typeof (options.logger as { child?: unknown } | null)?.child !== 'function') {
    throw new InvalidArgumentError('logger', 'must be a pino (or pino-compatible) logger, with child()');
  }
  checkOtel(options.otel);
  const retry = { ...DEFAULT_RETRY, ...options.retry };
  for (const [name, value] of Object.entries(retry)) {
    if (name === 'randomize') {
      if (typeof value !== 'boolean') throw new InvalidArgumentError('retry.randomize', 'must be a boolean');
    } else if (typeof value !== 'number' || !(value >= 0) || !Number.isFinite(value)) {
      throw new InvalidArgumentError(`retry.${name}`, `must be a finite number >= 0; got ${String(value)}`);
    }
  }
  return {
    lockWatchdogTimeout: atLeast('lockWatchdogTimeout', positive('lockWatchdogTimeout', options.lockWatchdogTimeout, 30_000), MIN_WATCHDOG_TIMEOUT_MS),
    subscriptionTimeout: positive('subscriptionTimeout', options.subscriptionTimeout, 7_500),
    responseTimeout: positive('responseTimeout', options.responseTimeout, 3_000),
    watchdogBatchSize: positive('watchdogBatchSize', options.watchdogBatchSize, 100, 'holds'),
    fairLockWaitTimeout: positive('fairLockWaitTimeout', options.fairLockWaitTimeout, 300_000),
    retry,
    syncReplicasTimeout: syncTimeout(options.syncReplicas),
    scripting: scriptingMode(options.scripting),
  };
}

function scriptingMode(option: unknown): ScriptingMode {
  if (option === undefined) return 'auto';
  if (option === 'eval' || option === 'functions' || option === 'auto') return option;
  throw new InvalidArgumentError('scripting', `must be 'eval', 'functions' or 'auto'; got ${typeof option === 'string' ? `'${option}'` : typeof option}`);
}

function syncTimeout(option: LockClientOptions['syncReplicas']): number | undefined {
  if (option === undefined || option === false) return undefined;
  if (option === true) return 1000;
  if (typeof option !== 'object' || option === null) throw new InvalidArgumentError('syncReplicas', 'must be true, false or { timeout: ms }');
  refuseUnknownKeys(option, ['timeout'], 'syncReplicas.');
  return positive('syncReplicas.timeout', option.timeout, 1000);
}

/** Throws `InvalidArgumentError` naming the first part of the `otel` option that is not as `OtelOptions` describes. */
function checkOtel(option: LockClientOptions['otel']): void {
  if (option === undefined || option === false) return;
  if (typeof option !== 'object' || option === null) throw new InvalidArgumentError('otel', 'must be false or { meterProvider?, tracerProvider?, recordNames? }');
  refuseUnknownKeys(option, OTEL_KEYS, 'otel.');
  if (option.meterProvider !== undefined && typeof option.meterProvider?.getMeter !== 'function') throw new InvalidArgumentError('otel.meterProvider', 'must be an OpenTelemetry MeterProvider (with getMeter())');
  if (option.tracerProvider !== undefined && typeof option.tracerProvider?.getTracer !== 'function') throw new InvalidArgumentError('otel.tracerProvider', 'must be an OpenTelemetry TracerProvider (with getTracer())');
  if (option.recordNames !== undefined && typeof option.recordNames !== 'boolean') throw new InvalidArgumentError('otel.recordNames', 'must be a boolean');
  const api = option.api as { metrics?: { getMeterProvider?: unknown }; trace?: { getTracerProvider?: unknown } } | undefined;
  if (api !== undefined && (typeof api?.metrics?.getMeterProvider !== 'function' || typeof api.trace?.getTracerProvider !== 'function')) {
    throw new InvalidArgumentError('otel.api', "must be the @opentelemetry/api module (import * as api from '@opentelemetry/api')");
  }
}

/**
 * Throws `InvalidArgumentError` for a key of a nested options object given at the top level
 * (`createLockClient({ redis, meterProvider })`), naming where it belongs (`otel: { meterProvider }`);
 * `refuseUnknownKeys` then refuses any other unknown key.
 */
function refuseNested(options: object): void {
  for (const [nested, keys] of [['otel', OTEL_KEYS], ['retry', RETRY_KEYS]] as const) {
    const key = keys.find((k) => Object.hasOwn(options, k));
    if (key !== undefined) throw new InvalidArgumentError(key, `unknown option ${JSON.stringify(key)} at the top level; it belongs in ${nested}: { ${nested}: { ${key} } }`);
  }
}

/** Throws `InvalidArgumentError` for a key prefix whose braces would break every name's hash tag. */
export function checkKeyPrefix(keyPrefix: string): void {
  try {
    mainKey(keyPrefix, 'x');
  } catch (error) {
    throw new InvalidArgumentError('keyPrefix', `"${keyPrefix}" has braces that do not form a {hash tag}, which would break the hash tag of every name: use a prefix with a whole {tag} or no braces (${(error as Error).message})`);
  }
}

/**
 * The smallest `lockWatchdogTimeout` (ms): the watchdog renews every third of it, and below this a
 * renewal's round trip and the event loop's delays use up the whole lease (1 or 10 ms lost every hold at once).
 */
const MIN_WATCHDOG_TIMEOUT_MS = 100;

/** `value`, or `InvalidArgumentError` naming `name` and the bound when it is below `min` (ms). */
function atLeast(name: string, value: number, min: number): number {
  if (value < min) throw new InvalidArgumentError(name, `must be at least ${min} ms; got ${value}`);
  return value;
}

/** A positive whole number (of milliseconds unless `what` says otherwise): these go to Redis as integers (`PEXPIRE`, `WAIT`). */
function positive(name: string, value: number | undefined, fallback: number, what = 'milliseconds'): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value > 0) || !Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(name, `must be a positive whole number of ${what}; got ${String(value)}`);
  }
  return value;
}
