import type { Logger } from 'pino';
import { LockLostError } from '../errors.js';
import { outsideContexts } from '../context.js';
import { keySlot } from '../keys.js';
import { classify, ResponseTimeoutError } from '../redis/failures.js';
import type { Executor } from '../redis/executor.js';
import type { Script } from '../redis/script.js';
import { monotonic } from '../time.js';

/**
 * A kind of renewable hold and the script that renews a batch of them. The script gets the keys of
 * every hold in the batch (`keysPerHold` each, in order), `ARGV[1]` = lease in milliseconds, then the
 * arguments of every hold (`argsPerHold` each), and returns one integer per hold: 1 renewed, 0 gone.
 */
export interface RenewalKind {
  readonly script: Script;
  readonly keysPerHold: number;
  readonly argsPerHold: number;
}

/** Renewal calls the watchdog sends per event-loop turn before it yields (2,000 holds in batches of 100). */
const DISPATCH_SLICE = 20;

/** Details of a lost hold, as given to the `lockLost` event. */
export interface LockLostEvent {
  /** The object's name as given to `getLock()` (and the other factories). */
  name: string;
  /** The Redis key that was renewed. */
  key: string;
  /** The owner id (`clientId:contextId`) that held it; for an expirable permit, the permit id. */
  owner: string;
  /** Why it was lost; see `LockLostError.reason`. */
  reason: LockLostError['reason'];
  /** The error the holder's handle signal aborted with (`signal.reason`). */
  error: LockLostError;
}

/**
 * How much earlier than Redis the watchdog ends a lease it could not renew, in ms: 1% of the lease plus
 * 2 ms (Redlock's clock drift factor). The client's clock and Redis's may run at slightly different rates
 * and timers fire late, so a holder must stop believing a little before Redis can expire its key.
 */
export function clockDriftMs(leaseMs: number): number {
  return leaseMs / 100 + 2;
}

/** One renewable hold: a (kind, key, owner) of this client, with its local lease deadline. */
/** The controllers of every renewal without a handle: empty, never added to (see `Renewal.watch`). */
const NO_HANDLES = new Set<AbortController>();

export class Renewal {
  /** Acquisitions confirmed by Redis and not yet released. */
  holds = 0;
  /** Acquisitions sent but not answered yet: the hold is registered before its acquire resolves. */
  pending = 0;
  /**
   * Monotonic time at which the lease ends unless renewed: send time of the last success + lease − clock
   * drift (`clockDriftMs`), so it ends before the TTL Redis set.
   */
  deadline = 0;
  /** Monotonic time of the next renewal. */
  nextAt = 0;
  failures = 0;
  inFlight = false;
  lastError: unknown = undefined;
  /**
   * Aborted (with a `LockLostError`) when the hold is lost. The shared empty set until a handle watches
   * the hold (`watch`): most holds have no handle (`lock()`), so none allocates a set of its own.
   */
  controllers: Set<AbortController> = NO_HANDLES;
  /** Holds of one group (kind and cluster slot) can share a renewal call. */
  readonly group: string;

  /**
   * Makes a dropped renewal new again for `Watchdog.reserve`; false (and unchanged) when it is still in
   * use: holding, pending, or with a renewal call in flight whose reply must not touch a new hold.
   */
  /** Adds the controller of a handle on this hold (aborted when it is lost). */
  watch(controller: AbortController): void {
    if (this.controllers === NO_HANDLES) this.controllers = new Set();
    this.controllers.add(controller);
  }

  revive(): boolean {
    if (this.holds > 0 || this.pending > 0 || this.inFlight || this.controllers.size > 0) return false;
    this.deadline = 0;
    this.nextAt = 0;
    this.failures = 0;
    this.lastError = undefined;
    return true;
  }

  constructor(
    readonly id: string,
    readonly kind: RenewalKind,
    readonly name: string,
    readonly key: string,
    readonly owner: string,
    readonly keys: readonly string[],
    readonly args: readonly string[],
    readonly slot: number,
  ) {
    this.group = `${slot}\u0000${kind.script.sha}`;
  }
}

/**
 * The watchdog (Redisson's `LockRenewalScheduler`): one per client, it keeps holds taken without a
 * lease alive. Each hold is renewed `lockWatchdogTimeout / 3` after its acquisition or last renewal, in
 * batches of at most `batchSize` holds of one kind and one cluster slot per script call; holds due
 * within a quarter interval of each other share a batch. Transient errors are retried with backoff until
 * the hold's local lease deadline (monotonic clock, ending `clockDriftMs` before Redis's TTL). A hold is
 * lost when a renewal finds it gone or its deadline passes, also while a renewal is still waiting for its
 * reply, or when its own unlock finds it gone first (`reportLost`): its signals abort and `onLost` runs,
 * once. It also watches the explicit leases of handles (`watchLease`), so that `stop()` (shutdown) can tell
 * every live hold. Nothing here throws out of a timer; timers are unref()ed.
 */
export class Watchdog {
  /** Holds waiting for their next renewal, by id, in order of `nextAt`. */
  private readonly queue = new Map<string, Renewal>();
  private readonly retrying = new Map<string, Renewal>();
  private readonly all = new Map<string, Renewal>();
  /** Explicit leases of handles being watched (`watchLease`), told at shutdown. */
  private readonly leases = new Set<LeaseWatch>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private stopped = false;
  private readonly driftMs: number;
  /** Renewal script calls made (for diagnostics and benchmarks). */
  calls = 0;
  /**
   * Told after each renewal call: whether it got an answer, and how many of its holds were renewed and
   * found gone (the observer's `relock.watchdog.*` metrics; set only while metrics are recorded).
   */
  onRenewal: ((answered: boolean, renewed: number, gone: number) => void) | undefined;

  constructor(
    private readonly executor: Executor,
    /** Lease written for holds without an explicit lease, in milliseconds (`lockWatchdogTimeout`). */
    readonly leaseMs: number,
    private readonly batchSize: number,
    private readonly clustered: boolean,
    private readonly log: Logger,
    private readonly onLost: (event: LockLostEvent) => void,
  ) {
    this.driftMs = clockDriftMs(leaseMs);
  }

  get intervalMs(): number {
    return this.leaseMs / 3;
  }

  /** Number of holds being renewed (for tests and diagnostics). */
  get size(): number {
    return this.all.size;
  }

  /**
   * Registers an acquisition about to be sent, so that an unlock racing with it can cancel it. Follow
   * with `confirm()` when Redis granted it or `abandon()` when it did not. `spare`: a renewal of the
   * same hold that was dropped since (the caller's previous one), reused when no call of it is in flight,
   * so that a lock taken and released in a loop allocates no new renewal.
   */
  reserve(kind: RenewalKind, name: string, key: string, owner: string, keys: readonly string[], args: readonly string[], spare?: Renewal): Renewal {
    const id = spare !== undefined && spare.key === key && spare.owner === owner ? spare.id : `${key}\u0000${owner}`;
    let renewal = this.all.get(id);
    if (!renewal || renewal.kind !== kind) {
      renewal = spare?.id === id && spare.kind === kind && spare !== renewal && spare.revive() ? spare : new Renewal(id, kind, name, key, owner, keys, args, this.clustered ? keySlot(key) : 0);
      this.all.set(id, renewal);
    }
    renewal.pending++;
    return renewal;
  }

  /** The acquisition sent at monotonic time `sentAt` was granted: renew from a third of a lease later. */
  confirm(renewal: Renewal, sentAt: number): void {
    renewal.pending--;
    if (this.all.get(renewal.id) !== renewal) return;
    renewal.holds++;
    renewal.deadline = Math.max(renewal.deadline, sentAt + this.leaseMs - this.driftMs);
    if (!renewal.inFlight && !this.queue.has(renewal.id) && !this.retrying.has(renewal.id)) this.schedule(renewal, sentAt + this.intervalMs);
  }

  /** The acquisition was not granted (busy, error, given up). */
  abandon(renewal: Renewal): void {
    renewal.pending--;
    this.dropIfIdle(renewal);
  }

  /**
   * Called synchronously at the start of an unlock: one hold fewer; at zero, no renewal is ever sent again.
   * Returns the hold as it was when this released the last one, so that the unlock can report it lost
   * (`reportLost`) if Redis then answers that it was gone; undefined otherwise.
   */
  release(key: string, owner: string): ReleasedHold | undefined {
    const renewal = this.all.get(`${key}\u0000${owner}`);
    if (!renewal) return undefined;
    const last = renewal.holds === 1;
    if (renewal.holds > 0) renewal.holds--;
    const released = last ? { renewal, deadline: renewal.deadline, lastError: renewal.lastError, controllers: renewal.controllers.size > 0 ? [...renewal.controllers] : NO_CONTROLLERS } : undefined;
    this.dropIfIdle(renewal);
    return released;
  }

  /**
   * Reports a hold lost that its own unlock found gone from Redis after `release()` had stopped renewing it
   * (the unlock ran before the watchdog could notice: a blocked event loop resuming past the lease, a key
   * deleted meanwhile). Its signals (and `controller`, the releasing handle's) abort and `lockLost` fires,
   * once: the watchdog no longer knows the hold.
   * The reason is `'renewal-late'` (or `'renewal-failed'`) when its local deadline had passed, else `'expired'`.
   */
  reportLost(hold: ReleasedHold, releasedAt: number, controller?: AbortController): void {
    const late = releasedAt >= hold.deadline;
    const reason = !late ? 'expired' : hold.lastError === undefined ? 'renewal-late' : 'renewal-failed';
    const { name, key, owner } = hold.renewal;
    this.log.warn({ lock: name, key, owner, reason }, 'lock lost (found by its unlock)');
    this.tell(name, key, [owner], reason, controller ? [...hold.controllers, controller] : hold.controllers, late ? hold.lastError : undefined);
  }

  /**
   * Watches the explicit lease of a handle (a lock or expirable permits) that runs from `sentAt`
   * (monotonic ms) for `leaseMs`: `controller` aborts with a `LockLostError` (`'lease-ended'`, no
   * `lockLost` event) a drift margin (`clockDriftMs`) before Redis can expire the hold, or with `'shutdown'`
   * (and `lockLost` for each of `owners`) when the client shuts down first (at once, without an event,
   * when it already has). Returns the function that stops watching (a release, a new lease).
   */
  watchLease(name: string, key: string, owners: readonly string[], controller: AbortController, sentAt: number, leaseMs: number): () => void {
    if (this.stopped) {
      controller.abort(new LockLostError(name, 'shutdown'));
      return () => {};
    }
    const watch: LeaseWatch = { name, key, owners, controller, timer: undefined };
    const ends = sentAt + leaseMs - clockDriftMs(leaseMs);
    watch.timer = outsideContexts(() =>
      setTimeout(() => {
        this.leases.delete(watch);
        controller.abort(new LockLostError(name, 'lease-ended'));
      }, Math.max(0, ends - monotonic())),
    );
    watch.timer.unref();
    this.leases.add(watch);
    return () => {
      clearTimeout(watch.timer);
      this.leases.delete(watch);
    };
  }

  /**
   * Adds a handle's signal to the watchdog hold of `owner` on `key` (aborted when the hold is lost). A
   * hold the watchdog no longer has (the client shut down, or the hold was lost and reported, between the
   * grant and the handle) aborts it at once; `lockLost` was emitted then, if at all, not again.
   */
  attach(name: string, key: string, owner: string, controller: AbortController): Renewal | undefined {
    const renewal = this.get(key, owner);
    if (renewal) renewal.watch(controller);
    else controller.abort(new LockLostError(name, this.stopped ? 'shutdown' : 'expired'));
    return renewal;
  }

  /**
   * The holds of `owner` on `key` were found gone by an acquisition of the same owner (its acquire script
   * answered that Redis had no hold of it, see `holdSource`): when the watchdog still renewed them, they
   * are reported lost (`lockLost`, reason `'expired'`) as its next renewal would have, once. A reservation
   * of that acquisition (`reserve`) stays.
   */
  holdsEnded(key: string, owner: string): void {
    const renewal = this.all.get(`${key}\u0000${owner}`);
    if (renewal && renewal.holds > 0) this.lose(renewal, 'expired');
  }

  /** Stops renewing every hold of `key` (after `forceUnlock`). */
  forget(key: string): void {
    for (const renewal of this.all.values()) {
      if (renewal.key === key) {
        renewal.holds = 0;
        this.dropIfIdle(renewal);
      }
    }
  }

  /** The registered hold of `owner` on `key`, if it is being renewed. */
  get(key: string, owner: string): Renewal | undefined {
    const renewal = this.all.get(`${key}\u0000${owner}`);
    return renewal && renewal.holds > 0 ? renewal : undefined;
  }

  /**
   * Renews every hold now (after a reconnect or a failover): a hold that did not survive is reported lost
   * at once instead of at its next scheduled renewal.
   */
  renewAllNow(): void {
    const now = monotonic();
    for (const renewal of [...this.queue.values()]) this.schedule(renewal, now, true);
  }

  /**
   * Stops all renewals (shutdown); the keys expire within one lease. Every hold still renewed, and every
   * handle's explicit lease still watched, is reported lost with reason `'shutdown'`: its signals abort and
   * `lockLost` fires (once per owner).
   */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const renewed = [...this.all.values()].filter((renewal) => renewal.holds > 0);
    const leases = [...this.leases];
    this.queue.clear();
    this.retrying.clear();
    this.all.clear();
    this.leases.clear();
    if (renewed.length + leases.length > 0) this.log.info({ renewed: renewed.length, leased: leases.length }, 'shutdown: holds given up (they expire with their leases)');
    for (const renewal of renewed) this.tell(renewal.name, renewal.key, [renewal.owner], 'shutdown', [...renewal.controllers]);
    for (const watch of leases) {
      clearTimeout(watch.timer);
      this.tell(watch.name, watch.key, watch.owners, 'shutdown', [watch.controller]);
    }
  }

  private dropIfIdle(renewal: Renewal): void {
    if (renewal.holds > 0 || renewal.pending > 0) return;
    if (this.all.get(renewal.id) === renewal) this.all.delete(renewal.id);
    this.queue.delete(renewal.id);
    this.retrying.delete(renewal.id);
    for (const controller of renewal.controllers) renewal.controllers.delete(controller);
  }

  /** Normal renewals are appended, so `queue` stays in `nextAt` order; retries (few) are kept apart. */
  private schedule(renewal: Renewal, at: number, retry = false): void {
    renewal.nextAt = at;
    this.queue.delete(renewal.id);
    this.retrying.delete(renewal.id);
    (retry ? this.retrying : this.queue).set(renewal.id, renewal);
    if (at < this.timerAt) this.arm(at);
  }

  private arm(at: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = outsideContexts(() => setTimeout(() => this.tick(), Math.max(0, at - monotonic())));
    this.timer.unref();
  }

  /**
   * Renews the holds that are due (or due within a quarter interval, so they share calls), at most
   * `DISPATCH_SLICE` calls' worth per event-loop turn: with 100,000 holds the rest follows on the next
   * turns instead of blocking the application while every call is built.
   */
  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = monotonic();
    const horizon = now + this.intervalMs / 4;
    const limit = DISPATCH_SLICE * this.batchSize;
    const due: Renewal[] = [];
    for (const renewal of this.queue.values()) {
      if (renewal.nextAt > horizon || due.length >= limit) break;
      due.push(renewal);
    }
    for (const renewal of this.retrying.values()) if (renewal.nextAt <= now) due.push(renewal);

    const batches = new Map<string, Renewal[]>();
    for (const renewal of due) {
      this.queue.delete(renewal.id);
      this.retrying.delete(renewal.id);
      if (renewal.holds === 0) continue;
      if (renewal.deadline <= now) {
        this.lose(renewal, renewal.lastError === undefined ? 'renewal-late' : 'renewal-failed', renewal.lastError);
        continue;
      }
      const batch = batches.get(renewal.group);
      if (batch) batch.push(renewal);
      else batches.set(renewal.group, [renewal]);
    }
    for (const batch of batches.values()) {
      for (let i = 0; i < batch.length; i += this.batchSize) void this.renew(batch.slice(i, i + this.batchSize));
    }

    let earliest = this.queue.values().next().value?.nextAt ?? Infinity;
    for (const renewal of this.retrying.values()) earliest = Math.min(earliest, renewal.nextAt);
    if (earliest < Infinity) this.arm(earliest);
  }

  private async renew(batch: Renewal[]): Promise<void> {
    const kind = batch[0].kind;
    const keys: string[] = [];
    const args: string[] = [String(this.leaseMs)];
    let earliestDeadline = Infinity;
    for (const renewal of batch) {
      renewal.inFlight = true;
      keys.push(...renewal.keys);
      args.push(...renewal.args);
      earliestDeadline = Math.min(earliestDeadline, renewal.deadline);
    }
    const sentAt = monotonic();
    this.calls++;
    let results: unknown;
    let failure: unknown;
    try {
      const timeout = Math.max(1, Math.min(this.executor.responseTimeout, earliestDeadline - sentAt));
      results = await this.within(this.executor.attempt(kind.script.run(this.executor.connection, keys, args), timeout), timeout);
    } catch (error) {
      failure = error;
    }
    if (this.stopped) return;
    const now = monotonic();
    if (failure !== undefined) {
      this.log.warn({ holds: batch.length, first: batch[0].name, err: failure, kind: classify(failure) }, 'lock renewal failed; retrying');
    }
    let renewed = 0;
    let gone = 0;
    batch.forEach((renewal, i) => {
      renewal.inFlight = false;
      if (this.all.get(renewal.id) !== renewal || renewal.holds === 0) return;
      if (failure !== undefined) {
        renewal.failures++;
        renewal.lastError = failure;
        const backoff = Math.min(this.intervalMs, 50 * 2 ** renewal.failures);
        this.schedule(renewal, Math.min(now + backoff, renewal.deadline), true);
        return;
      }
      if (Array.isArray(results) && Number(results[i]) === 1) {
        renewal.failures = 0;
        renewal.lastError = undefined;
        renewal.deadline = sentAt + this.leaseMs - this.driftMs;
        this.schedule(renewal, sentAt + this.intervalMs);
        renewed++;
      } else {
        this.lose(renewal, 'expired');
        gone++;
      }
    });
    this.onRenewal?.(failure === undefined, renewed, gone);
  }

  /**
   * Rejects with a `ResponseTimeoutError` after `ms` on a timer of its own: the executor's shared sweeper
   * runs only every few tens of ms, and a renewal stuck past the hold's deadline must end it on time.
   */
  private within<T>(call: Promise<T>, ms: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = outsideContexts(() => setTimeout(() => reject(new ResponseTimeoutError(ms)), ms));
      timer.unref();
    });
    return Promise.race([call, expired]).finally(() => clearTimeout(timer));
  }

  private lose(renewal: Renewal, reason: LockLostError['reason'], cause?: unknown): void {
    const controllers = [...renewal.controllers];
    renewal.holds = 0;
    renewal.controllers.clear();
    this.dropIfIdle(renewal);
    this.log.warn({ lock: renewal.name, key: renewal.key, owner: renewal.owner, reason }, 'lock lost');
    this.tell(renewal.name, renewal.key, [renewal.owner], reason, controllers, cause);
  }

  /** Aborts `controllers` with one `LockLostError` and emits `lockLost` for each of `owners`. */
  private tell(name: string, key: string, owners: readonly string[], reason: LockLostError['reason'], controllers: readonly AbortController[], cause?: unknown): void {
    const error = new LockLostError(name, reason, cause === undefined ? undefined : { cause });
    for (const controller of controllers) controller.abort(error);
    for (const owner of owners) {
      try {
        this.onLost({ name, key, owner, reason, error });
      } catch (listenerError) {
        this.log.error({ err: listenerError }, 'lockLost listener threw');
      }
    }
  }
}

const NO_CONTROLLERS: readonly AbortController[] = Object.freeze([]);

/** What `Watchdog.release()` returns when it released a renewal's last hold (see `reportLost`). */
export interface ReleasedHold {
  readonly renewal: Renewal;
  /** The hold's local deadline when it was released (monotonic ms). */
  readonly deadline: number;
  readonly lastError: unknown;
  /** The signals still attached to the hold when it was released. */
  readonly controllers: readonly AbortController[];
}

/** A handle's explicit lease being watched (see `Watchdog.watchLease`). */
interface LeaseWatch {
  readonly name: string;
  readonly key: string;
  readonly owners: readonly string[];
  readonly controller: AbortController;
  timer: NodeJS.Timeout | undefined;
}
