import { EventEmitter } from 'node:events';
import { pino } from 'pino';
import { randomId, runInContext } from './context.js';
import type { Core } from './core.js';
import { checkKeyPrefix, resolveOptions, type LockClientOptions } from './client-options.js';
import { ClientClosedError, InvalidArgumentError } from './errors.js';
import { RFencedLock } from './fenced-lock/fenced-lock.js';
import { RLock, type AcquireOptions } from './lock/lock.js';
import { RMultiLock } from './multi-lock/multi-lock.js';
import { RRedLock } from './red-lock/red-lock.js';
import { RSpinLock, type SpinLockOptions } from './spin-lock/spin-lock.js';
import { RNonReentrantLock } from './non-reentrant-lock/non-reentrant-lock.js';
import { RCountDownLatch } from './count-down-latch/latch.js';
import { RPermitExpirableSemaphore } from './permit-expirable-semaphore/semaphore.js';
import { RSemaphore } from './semaphore/semaphore.js';
import { RFairLock } from './fair-lock/fair-lock.js';
import { RReadWriteLock } from './read-write-lock/read-write-lock.js';
import { Channels } from './pubsub/channels.js';
import type { Connection } from './redis/connection.js';
import { openConnection } from './redis/clients/index.js';
import { Executor, withoutListenerLimit } from './redis/executor.js';
import { UnlockLatches } from './redis/latches.js';
import { ReplicaSync } from './redis/replica-sync.js';
import { useScripting } from './redis/script.js';
import { Watchdog, type LockLostEvent } from './watchdog/watchdog.js';
import { Observer } from './observe/observer.js';
import type { KindDescriptor } from './descriptor.js';
import { LOCK_DESCRIPTOR } from './lock/descriptor.js';
import { SPIN_LOCK_DESCRIPTOR } from './spin-lock/descriptor.js';
import { NON_REENTRANT_LOCK_DESCRIPTOR } from './non-reentrant-lock/descriptor.js';
import { FENCED_LOCK_DESCRIPTOR } from './fenced-lock/descriptor.js';
import { FENCED_RESOURCE_DESCRIPTOR } from './fenced-resource/descriptor.js';
import { RFencedResource } from './fenced-resource/fenced-resource.js';
import { FAIR_LOCK_DESCRIPTOR } from './fair-lock/descriptor.js';
import { READ_WRITE_LOCK_DESCRIPTOR } from './read-write-lock/descriptor.js';
import { SEMAPHORE_DESCRIPTOR } from './semaphore/descriptor.js';
import { PERMIT_EXPIRABLE_SEMAPHORE_DESCRIPTOR } from './permit-expirable-semaphore/descriptor.js';
import { COUNT_DOWN_LATCH_DESCRIPTOR } from './count-down-latch/descriptor.js';
import { RLeaderElection, type LeaderElectionOptions } from './leader-election/leader-election.js';
import { LEADER_ELECTION_DESCRIPTOR } from './leader-election/descriptor.js';
import { RJobLock, type ExclusiveRun, type RunExclusiveOptions } from './job-lock/job-lock.js';
import { JOB_LOCK_DESCRIPTOR } from './job-lock/descriptor.js';

export type { LockClientOptions, NodeRedisClient } from './client-options.js';

/**
 * Every kind of object relock keeps in Redis, one descriptor per primitive folder, in the order the
 * `relock` command lists them. The kind check (`WrongTypeError`), `isExists`/`delete`/`expire` and the
 * CLI read the kinds from here; a new primitive adds its descriptor to this list.
 */
export const OBJECT_DESCRIPTORS: readonly KindDescriptor[] = Object.freeze([
  LOCK_DESCRIPTOR,
  SPIN_LOCK_DESCRIPTOR,
  NON_REENTRANT_LOCK_DESCRIPTOR,
  FENCED_LOCK_DESCRIPTOR,
  FAIR_LOCK_DESCRIPTOR,
  READ_WRITE_LOCK_DESCRIPTOR,
  SEMAPHORE_DESCRIPTOR,
  PERMIT_EXPIRABLE_SEMAPHORE_DESCRIPTOR,
  COUNT_DOWN_LATCH_DESCRIPTOR,
  LEADER_ELECTION_DESCRIPTOR,
  JOB_LOCK_DESCRIPTOR,
  FENCED_RESOURCE_DESCRIPTOR,
]);

/** Events of a `LockClient`. */
export interface LockClientEvents {
  /**
   * A hold renewed by the watchdog (a lock, or an expirable permit, taken without a lease) was lost: a
   * renewal found it gone (expired while this process was paused, deleted, Redis restarted or failed over
   * without it), renewals failed until its lease ended, or the holder's own unlock found it gone before
   * the watchdog did. The holder's handle signal aborts too. Emitted once per lost hold, and never for a
   * hold that was released. Not emitted when an explicit lease runs out (only the handle's signal aborts
   * then). At `shutdown()` it is emitted (reason `'shutdown'`) for every hold the watchdog was renewing and
   * every handle with an explicit lease still held. The listener runs outside any lock context; an error
   * it throws is logged, not rethrown.
   */
  lockLost: [event: LockLostEvent];
}

/**
 * The entry point: makes lock objects that share this client's connections, watchdog and subscriptions.
 * Create one per process (per Redis deployment) with `createLockClient()` and `shutdown()` it on exit.
 */
export class LockClient extends EventEmitter<LockClientEvents> {
  /** Random id of this client: the first half of every owner id `clientId:contextId`. */
  readonly id: string = randomId();
  private readonly core: Core;
  private closed = false;
  /** Aborted when `shutdown()` starts; every background pause listens to it (no listener limit, see `Executor.closing`). */
  private readonly closing = withoutListenerLimit(new AbortController());
  private shutdownPromise: Promise<void> | undefined;

  /** @internal Use `createLockClient()`. */
  constructor(options: LockClientOptions) {
    super();
    const o = resolveOptions(options);
    if (options.keyPrefix !== undefined) checkKeyPrefix(options.keyPrefix);
    const log = (options.logger ?? pino({ level: 'silent' })).child({ component: 'relock', clientId: this.id });
    const connection: Connection = openConnection({
      redis: options.redis,
      url: options.url,
      onError: (error, source) => log.debug({ err: error, source }, 'Redis connection error'),
    });
    const keyPrefix = options.keyPrefix ?? connection.clientKeyPrefix ?? '';
    if (options.keyPrefix === undefined) checkKeyPrefix(keyPrefix);
    if (o.lockWatchdogTimeout < 3 * o.responseTimeout) {
      log.warn({ lockWatchdogTimeout: o.lockWatchdogTimeout, responseTimeout: o.responseTimeout }, 'lockWatchdogTimeout is below 3 × responseTimeout: a renewal without a reply may not be retried before the lease runs out');
    }
    useScripting(connection, o.scripting, log);
    const executor = new Executor(connection, o.retry, o.responseTimeout, log, OBJECT_DESCRIPTORS);
    const clustered = connection.topology === 'cluster';
    const latchTtl = Math.ceil((o.responseTimeout + 2 * o.retry.maxTimeout) * (o.retry.retries + 1));
    const observe = new Observer(options.otel ?? {}, log);
    this.core = {
      id: this.id,
      keyPrefix,
      connection,
      executor,
      channels: new Channels(connection, log),
      watchdog: new Watchdog(executor, o.lockWatchdogTimeout, o.watchdogBatchSize, clustered, log, (event) => {
        observe.lost(event);
        this.emit('lockLost', event);
      }),
      observe,
      latches: new UnlockLatches(this.id, executor, keyPrefix, latchTtl, clustered, log),
      replicaSync: o.syncReplicasTimeout === undefined ? undefined : new ReplicaSync(executor, o.syncReplicasTimeout, clustered, log),
      subscriptionTimeout: o.subscriptionTimeout,
      fairLockWaitTimeout: o.fairLockWaitTimeout,
      log,
      debug: log.isLevelEnabled('debug'),
      checkOpen: () => {
        if (this.closed) throw new ClientClosedError();
      },
      closing: this.closing.signal,
      kinds: OBJECT_DESCRIPTORS,
    };
    connection.onReconnected(() => this.core.watchdog.renewAllNow());
    observe.count(executor, this.core.watchdog);
  }

  /**
   * A reentrant lock object for `name` (Redisson's `getLock`); see `RLock` for its keys and ownership:
   * reentrant per lock context; outside any context a mutex (each acquisition its own owner), so one object
   * may be shared by concurrent tasks. Each call returns a new object. Sends nothing to Redis. Throws
   * `InvalidArgumentError` for an empty name, `CrossSlotError` for braces that do not form a hash tag.
   */
  getLock(name: string): RLock {
    return new RLock(this.core, name);
  }

  /**
   * A reentrant lock that returns a fencing token with every acquisition (Redisson's `getFencedLock`);
   * see `RFencedLock`. Each call returns a new object. Throws as `getLock`.
   */
  getFencedLock(name: string): RFencedLock {
    return new RFencedLock(this.core, name);
  }

  /**
   * Data in Redis written only with a fencing token at least as high as any it accepted (issue 33): the
   * storage-side check of a fenced lock's tokens, in Lua; see `RFencedResource`. Each call returns a new
   * object. Sends nothing to Redis. Throws as `getLock`.
   */
  getFencedResource(name: string): RFencedResource {
    return new RFencedResource(this.core, name);
  }

  /**
   * A reentrant lock that waits by polling with exponential backoff instead of pub/sub (Redisson's
   * `getSpinLock`): the `RLock` hash, scripts and watchdog, no subscription, and unlocks that publish
   * nothing; see `RSpinLock`. `options` (ms): `initialDelay` (default 1), `maxDelay` (default 128),
   * `multiplier` (default 2). Each call returns a new object. Throws as `getLock`, and
   * `InvalidArgumentError` naming a bad option.
   */
  getSpinLock(name: string, options?: SpinLockOptions): RSpinLock {
    return new RSpinLock(this.core, name, options);
  }

  /**
   * A lock that is not reentrant (Redisson 4.4's `getNonReentrantLock`), the cheapest relock lock: a plain
   * string holding the owner, acquired with `SET NX PX` (no script), released by a compare-and-delete
   * script, renewed by the watchdog, waited for by pub/sub; an owner that acquires it again waits like any
   * other owner. See `RNonReentrantLock`. Each call returns a new object. Throws as `getLock`.
   */
  getNonReentrantLock(name: string): RNonReentrantLock {
    return new RNonReentrantLock(this.core, name);
  }

  /**
   * All-or-nothing over `locks` (Redisson's `getMultiLock`): any relock locks (`getLock`, `getFencedLock`,
   * `getSpinLock`, …), possibly from other `LockClient`s on other Redis servers. It never waits while
   * holding part of the set; see `RMultiLock`. Throws `InvalidArgumentError` when no lock is given, one is
   * not a relock lock, or one is given twice.
   */
  getMultiLock(...locks: RLock[]): RMultiLock {
    return new RMultiLock(this.core, locks);
  }

  /**
   * The Redlock algorithm over `locks`, one per independent Redis master, each from its own `LockClient`
   * (Redisson's deprecated `getRedLock`): held when a quorum `floor(N / 2) + 1` granted within the lease
   * minus elapsed time and clock drift; see `RRedLock`, and prefer `getFencedLock` on a replicated master.
   * Throws `InvalidArgumentError` when no lock is given, one is not a relock lock, or two come from the
   * same `LockClient`.
   */
  getRedLock(...locks: RLock[]): RRedLock {
    return new RRedLock(this.core, locks);
  }

  /**
   * A counting semaphore object for `name` (Redisson's `getSemaphore`): a free-permit count in a string
   * at `keyPrefix + name`, with no owners and no leases (a crashed holder's permits are not given back;
   * use `getPermitExpirableSemaphore` for that). See `RSemaphore` for its keys and channel. Each call
   * returns a new object. Throws as `getLock`.
   */
  getSemaphore(name: string): RSemaphore {
    return new RSemaphore(this.core, name);
  }

  /**
   * A semaphore of expirable permits for `name` (Redisson's `getPermitExpirableSemaphore`): "at most N at
   * once", where each permit has an id and an expiry in Redis server time, renewed by the watchdog when
   * taken without a lease, so a crashed holder's permit comes back. See `RPermitExpirableSemaphore` for
   * its keys and channel. Each call returns a new object. Throws as `getLock`.
   */
  getPermitExpirableSemaphore(name: string): RPermitExpirableSemaphore {
    return new RPermitExpirableSemaphore(this.core, name);
  }

  /**
   * A count-down latch object for `name` (Redisson's `getCountDownLatch`): a count in a string at
   * `keyPrefix + name`; every awaiter in every process is released when it reaches zero. See
   * `RCountDownLatch`. Each call returns a new object. Throws as `getLock`.
   */
  getCountDownLatch(name: string): RCountDownLatch {
    return new RCountDownLatch(this.core, name);
  }

  /**
   * A reentrant lock granted first come, first served across processes (Redisson's `getFairLock`): the
   * waiter that has waited longest gets it next. Same API as `RLock`; see `RFairLock` for its queue,
   * per-waiter channels and crash behaviour, and the `fairLockWaitTimeout` option. Each call returns a
   * new object. Throws `InvalidArgumentError` for an empty name or braces that do not form a hash tag.
   */
  getFairLock(name: string): RFairLock {
    return new RFairLock(this.core, name);
  }

  /**
   * A read-write lock (Redisson's `getReadWriteLock`): `readLock()` is shared by readers, `writeLock()`
   * excludes everyone else; both have `RLock`'s API. See `RReadWriteLock` for keys, downgrading and
   * leases. Each call returns a new object. Ownership as `RLock`'s, across both sides (outside any context
   * each acquisition is its own owner, so a downgrade needs a context). Throws `InvalidArgumentError` for an empty name or braces that do not form a hash tag.
   */
  getReadWriteLock(name: string): RReadWriteLock {
    return new RReadWriteLock(this.core, name);
  }

  /**
   * Runs `fn` holding the lock `name`, in a new context, and releases the lock when `fn` settles. Nested
   * `withLock` calls on the same name (in `fn` and everything it awaits) reenter; sibling tasks inside
   * `fn` that each call `withLock` on another name get separate ownership. `fn` receives an `AbortSignal`
   * that aborts (reason: `LockLostError`) when the lock is lost; relock does not stop `fn`, so pass the
   * signal on. Options as in `RLock.acquire` (`waitMs`/`leaseMs`, or `waitTime`/`leaseTime` with `unit`;
   * waits until free by default). Returns what `fn` returns. Throws `LockAcquireTimeoutError` (when the wait time ran out),
   * `options.signal.reason`, the errors of `RLock.acquire`, `fn`'s error (a failed release is then only
   * logged), or the release's error when `fn` succeeded (`IllegalMonitorStateError` when the lock was lost).
   */
  withLock<T>(name: string, fn: (signal: AbortSignal) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    if (typeof fn !== 'function') return Promise.reject(new InvalidArgumentError('fn', 'must be a function'));
    return runInContext(async () => {
      const handle = await this.getLock(name).acquire(options);
      let result: T;
      try {
        result = await fn(handle.signal);
      } catch (error) {
        await handle.release().catch((releaseError: unknown) => this.core.log.warn({ lock: name, err: releaseError }, 'release after a failed task failed'));
        throw error;
      }
      await handle.release();
      return result;
    });
  }

  /**
   * A leader election for `name` (etcd's `concurrency.Election`, Curator's `LeaderLatch`/`LeaderSelector`),
   * built on the fenced lock and the watchdog: `campaign()` waits until elected and gives a `Leadership`
   * (term = fencing token, loss `signal`, `resign()`), `run(fn)` is the singleton-worker loop, `leader()`
   * and `observe()` tell who leads. `options.identity`: what this process publishes as leader (default
   * `hostname:pid`). See `RLeaderElection` for its keys and channels. Each call returns a new object.
   * Sends nothing to Redis. Throws as `getLock`, and `InvalidArgumentError` for a bad or unknown option.
   */
  getLeaderElection(name: string, options?: LeaderElectionOptions): RLeaderElection {
    return new RLeaderElection(this.core, name, options);
  }

  /**
   * Runs the scheduled job `fn` only if no other instance runs (or just ran) it (ShedLock's
   * `@SchedulerLock`; `withLock` stays for critical sections): one attempt at the lock `name` (kind
   * `job-lock`), never waiting. Busy: resolves `{ ran: false }` at once. Free: runs `fn(signal)` and
   * resolves `{ ran: true, value }`. The lock is kept at most `atMostMs` (the lease if this process dies;
   * with `watchdog: true` the watchdog renews it while `fn` runs, capped at `atMostMs`), and at least
   * `atLeastMs` from the start: an early finish shortens its TTL to the rest of `atLeastMs` (owner-checked
   * script `jobLock.shorten`, never lengthened) instead of releasing it, so that instances whose schedulers
   * fire slightly apart do not run the same tick twice. `signal` (`fn`'s) aborts when the lock is lost,
   * at the `atMostMs` cap, or when `options.signal` aborts; pass it on. Redis: the lock hash `keyPrefix +
   * name`. Throws `InvalidArgumentError` (bad or unknown option, `atLeastMs` above `atMostMs`),
   * `options.signal.reason`, `fn`'s error (the lock is left as after a finish), `WrongTypeError`,
   * `RedisUnavailableError`, `ClientClosedError`. See docs/scheduled-jobs.md.
   */
  runExclusive<T>(name: string, fn: (signal: AbortSignal) => T | Promise<T>, options: RunExclusiveOptions): Promise<ExclusiveRun<T>> {
    try {
      return new RJobLock(this.core, name).runExclusive(fn, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Runs `fn` in a new lock context nested in the caller's: the same as the exported `runInContext`. Locks
   * acquired inside are owned by that context (or reenter a lock an enclosing context holds). Returns what
   * `fn` returns (its promise, for an async `fn`). Sends nothing to Redis.
   */
  runInContext<T>(fn: () => T): T {
    return runInContext(fn);
  }

  /** Numbers for tests and diagnostics, read locally (nothing is sent to Redis). */
  stats(): {
    /** Holds (lock owners, expirable permits) the watchdog is renewing now. */
    watchdogHolds: number;
    /** Channels this client is subscribed to for local waiters now (one per object with waiters in this process). */
    subscriptions: number;
    /**
     * Channels still subscribed without waiters: each is kept for 250 ms after its last waiter left, so an
     * object contended again soon pays no SUBSCRIBE/UNSUBSCRIBE; `shutdown()` unsubscribes them at once.
     */
    lingeringSubscriptions: number;
    /** Renewal script calls the watchdog has sent since the client was created. */
    renewalCalls: number;
  } {
    return { watchdogHolds: this.core.watchdog.size, subscriptions: this.core.channels.size, lingeringSubscriptions: this.core.channels.lingeringCount, renewalCalls: this.core.watchdog.calls };
  }

  /**
   * Stops the watchdog and tells every live hold, without releasing it: the holders may still be running
   * their critical sections, and a release would let another process in while they do. The signals of
   * live handles (`LockHandle`, `PermitHandle`, `withLock`'s signal), renewed or with an explicit lease,
   * abort with a `LockLostError` whose `reason` is `'shutdown'`, and `lockLost` fires once for each hold the
   * watchdog was renewing and each such handle with an explicit lease; the keys stay until their leases
   * end (release the locks first to free them at once). Then wakes every waiter (they reject with
   * `ClientClosedError`), unsubscribes, deletes pending unlock latches, and closes the connections relock
   * created; a client passed as `redis` stays open: close it after this promise resolves. Later calls on
   * this client's objects (releases included) throw `ClientClosedError`. Idempotent: every call returns the
   * same promise, and holds are told once. Does not throw, and does not wait for an unreachable Redis: the
   * unsubscribes are waited for at most `responseTimeout`.
   */
  shutdown(): Promise<void> {
    this.shutdownPromise ??= (async () => {
      this.closed = true;
      this.closing.abort(new ClientClosedError());
      const { watchdog, channels, latches, connection, executor } = this.core;
      watchdog.stop();
      await channels.close(executor.responseTimeout);
      await latches.flush();
      await connection.close();
      executor.close();
    })();
    return this.shutdownPromise;
  }
}

/** The `Core` of `client`: the `relock` command opens objects through their descriptors with it. */
export function coreOf(client: LockClient): Core {
  return client['core'];
}

/**
 * Creates a `LockClient` (the Redisson client of relock): `createLockClient({ redis: client })` with your
 * connected node-redis client, or `createLockClient({ url })`. Synchronous: with `url` it starts connecting
 * and the first command waits for the connection (an unreachable server shows up as `RedisUnavailableError`
 * on the first call, after `responseTimeout`). Throws `InvalidArgumentError` naming a bad option, or a
 * client that lacks the node-redis methods relock needs.
 */
export function createLockClient(options: LockClientOptions): LockClient {
  return new LockClient(options);
}
