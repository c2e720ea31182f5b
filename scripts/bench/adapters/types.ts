/**
 * What the benchmark asks of every library: per-task mutexes and semaphores, long holds with the
 * library's own auto-renewal, and the Redis commands it sends itself (to count them in INFO
 * commandstats). Each adapter drives its library in its default configuration.
 */

/**
 * The libraries measured: `floor` is two bare EVALSHA round trips per cycle on relock's node-redis client
 * (its command options set once), `floor-setnx` the same with a plain `SET NX PX` acquire, `floor-ioredis`
 * the floor on the ioredis client the peers share; `lua-floor` relock's own acquire and unlock Lua and
 * `hash-floor` Redisson's RLock Lua, each by bare EVALSHA on relock's node-redis client (the design's cost
 * without client logic: see floor.ts); `*-tuned` are peers with a short retry interval; `relock-base` is relock
 * built from another source tree (`--baseline DIR`), for a before/after in one run; `relock-ioredis` is
 * relock on the ioredis client the peers use (one client, shared); `relock-glide` is relock on a Valkey
 * GLIDE 2 client (`GlideClient`), `floor-glide` the floor on one; `non-reentrant` is relock's
 * `getNonReentrantLock` (a plain `SET NX PX` acquire) on the node-redis client.
 */
export type Impl = 'relock' | 'non-reentrant' | 'relock-base' | 'relock-ioredis' | 'relock-glide' | 'redlock' | 'redlock-tuned' | 'sesamecare-redlock' | 'redis-semaphore' | 'redis-semaphore-tuned' | 'floor' | 'floor-ioredis' | 'floor-setnx' | 'floor-glide' | 'lua-floor' | 'hash-floor';

export const ALL_IMPLS: readonly Impl[] = ['relock', 'non-reentrant', 'relock-ioredis', 'relock-glide', 'floor', 'lua-floor', 'hash-floor', 'floor-ioredis', 'floor-setnx', 'floor-glide', 'redlock', 'redlock-tuned', 'sesamecare-redlock', 'redis-semaphore', 'redis-semaphore-tuned'];

/** The peers, default and tuned: what `×best peer` compares with. */
export const PEERS: readonly Impl[] = ['redlock', 'redlock-tuned', 'sesamecare-redlock', 'redis-semaphore', 'redis-semaphore-tuned'];

/**
 * Measured only in the in-process scenarios (1–3): a tuned peer differs from its default only in how
 * often it polls a busy lock, and `relock-base` exists only in the benchmark's own process.
 */
export const IN_PROCESS_ONLY: readonly Impl[] = ['relock-base', 'redlock-tuned', 'redis-semaphore-tuned'];

/**
 * The floors: two bare round trips per cycle and no waiting, measured only where nobody waits (scenarios
 * 1, 2 and 8). `×floor` is against `floor`, relock's node-redis floor, `×lua-floor` against `lua-floor`,
 * relock's own Lua without its client; the others are further references.
 */
const FLOORS: readonly Impl[] = ['floor', 'lua-floor', 'hash-floor', 'floor-ioredis', 'floor-setnx', 'floor-glide'];

/** Whether `impl` is a floor (see `FLOORS`). */
export const isFloor = (impl: Impl): boolean => FLOORS.includes(impl);

/** A lock (or one permit of a semaphore) as one task sees it: acquire, then release what it took. */
export interface Mutex {
  /**
   * Waits for the lock as long as the library's default configuration waits. Resolves to true when
   * acquired, false when the library gave up (redlock after its retries, redis-semaphore after its
   * `acquireTimeout`); the harness then calls it again, as an application would.
   */
  acquire(): Promise<boolean>;
  release(): Promise<void>;
}

/** Releases a hold taken by `Adapter.hold`. */
export type Release = () => Promise<void>;

export interface AdapterOptions {
  url: string;
  /**
   * Lease of holds that the library renews by itself (`hold()`), in ms: relock's
   * `lockWatchdogTimeout`, redlock's `using` duration, redis-semaphore's `lockTimeout`. Default: each
   * library's default (redlock has none: 30000, relock's).
   */
  leaseMs?: number;
  /** Called when a renewed hold is lost (scenario 5 counts them). */
  onLost?: () => void;
  /** The source tree `relock-base` is loaded from (its `src/index.ts`). */
  baseline?: string;
}

/**
 * The commands each library sends to Redis itself, as named in INFO commandstats. Commands that its
 * scripts run inside Redis are counted there too; counting only these counts requests (round trips),
 * not the work each script does. relock: its scripts, the batched UNLINK of unlock latches, and
 * (un)subscribing (`non-reentrant`: also its `SET NX` acquire and a refused attempt's `PTTL`); redis-semaphore and `floor-setnx`: `SET NX` to take a mutex, scripts for the rest.
 */
export const REQUEST_COMMANDS: Readonly<Record<Impl, readonly string[]>> = {
  relock: ['evalsha', 'eval', 'unlink', 'subscribe', 'unsubscribe'],
  'relock-base': ['evalsha', 'eval', 'unlink', 'subscribe', 'unsubscribe'],
  'non-reentrant': ['set', 'pttl', 'evalsha', 'eval', 'unlink', 'subscribe', 'unsubscribe'],
  'relock-ioredis': ['evalsha', 'eval', 'unlink', 'subscribe', 'unsubscribe'],
  'relock-glide': ['evalsha', 'eval', 'unlink', 'subscribe', 'unsubscribe'],
  floor: ['evalsha'],
  'floor-ioredis': ['evalsha'],
  'floor-setnx': ['set', 'evalsha'],
  'floor-glide': ['evalsha'],
  'lua-floor': ['evalsha'],
  'hash-floor': ['evalsha'],
  redlock: ['evalsha', 'eval'],
  'redlock-tuned': ['evalsha', 'eval'],
  'sesamecare-redlock': ['evalsha', 'eval'],
  'redis-semaphore': ['set', 'evalsha', 'eval'],
  'redis-semaphore-tuned': ['set', 'evalsha', 'eval'],
};

export interface Adapter {
  readonly impl: Impl;
  /** A mutex on `name` for one task: every task gets its own owner identity. */
  mutex(name: string): Mutex;
  /**
   * Acquires `name` and keeps it alive with the library's own renewal (relock's watchdog, redlock's
   * `using`, redis-semaphore's refresh timer) until the returned release is called. Undefined when the
   * library has no such mode (the floor).
   */
  hold?(name: string): Promise<Release>;
  /** As `hold`, keeping the library's handle of the hold (relock's `LockHandle` from `acquire()`); undefined when it has none. */
  handleHold?(name: string): Promise<Release>;
  /**
   * A semaphore of `permits` on `name`, as one task sees it; undefined when the library has none. The
   * returned `ready` runs once before the tasks start (relock's `trySetPermits`).
   */
  semaphore?(name: string, permits: number): { ready(): Promise<void>; task(): Mutex };
  /** Why `semaphore` is missing, printed instead of its figures. */
  readonly semaphoreMissing?: string;
  /** Renewal script calls made so far, when the library counts them (relock's `stats().renewalCalls`). */
  renewalCalls?(): number;
  close(): Promise<void>;
}
