import type { Logger } from 'pino';
import { LockLostError } from '../errors.js';
import { outsideContexts } from '../context.js';
import { keySlot } from '../keys.js';
import { classify, ResponseTimeoutError } from '../redis/failures.js';
import type { Executor } from '../redis/executor.js';
import { monotonic, setLongTimeout } from '../time.js';
import { clockDriftMs, Renewal, type WatchdogHold, type HoldHost, type HoldWatcher, type ReleasedHold, type RenewalKind } from './hold.js';

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
 * The watchdog (Redisson's `LockRenewalScheduler`): one per client, it keeps the holds taken without a
 * lease alive and runs their lifecycle (see `hold.ts`). Each hold is renewed `lockWatchdogTimeout / 3`
 * after its acquisition or last renewal, in batches of at most `batchSize` holds of one kind and one
 * cluster slot per script call; holds due within a quarter interval of each other share a batch.
 * Transient errors are retried with backoff until the hold's local lease deadline (monotonic clock,
 * ending `clockDriftMs` before Redis's TTL). A hold is lost when a renewal finds it gone or its deadline
 * passes, also while a renewal is still waiting for its reply, or when its own unlock finds it gone first
 * (`reportLost`): its signals abort and `onLost` runs, once. It also watches the explicit leases of
 * handles (`watchLease`), so that `stop()` (shutdown) can tell every live hold. Nothing here throws out
 * of a timer; timers are unref()ed.
 */
export class Watchdog implements HoldHost, HoldWatcher {
  /**
   * Registered holds by key: the hold, or (only while a key has holds of several owners: read locks,
   * permits) a map of them by owner. Most keys have one, so no per-key map or id string is made.
   */
  private readonly all = new Map<string, Renewal | Map<string, Renewal>>();
  private count = 0;
  /** Holds waiting for their next renewal, in order of `nextAt`. */
  private readonly queue = new Set<Renewal>();
  private readonly retrying = new Set<Renewal>();
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
    return this.count;
  }

  /**
   * Registers an acquisition of `owner` on `key` about to be sent, so that an unlock racing with it can
   * cancel it; `keys` are the keys its renewal script gets (an array the object shares between its holds;
   * omitted: the hold's key alone, as for every hash lock, with no array kept per lock).
   * Follow with `confirm()` when Redis granted it or `abandon()` when it did not. `spare`: a hold of the
   * same object registered before and dropped since (the caller's previous one), reused when no call of
   * it is in flight, so that a lock taken and released in a loop allocates no new record.
   */
  register(kind: RenewalKind, name: string, key: string, owner: string, keys?: readonly string[], spare?: WatchdogHold): WatchdogHold {
    let renewal = this.find(key, owner);
    if (!renewal || renewal.kind !== kind) {
      const reusable = spare instanceof Renewal && spare.key === key && spare.kind === kind && spare.revive(owner);
      renewal = reusable ? spare : new Renewal(this, kind, name, key, owner, keys, this.clustered ? keySlot(key) : 0);
      this.index(renewal);
    }
    renewal.pending++;
    return renewal;
  }

  /** @internal A hold's acquisition sent at `sentAt` was granted (`WatchdogHold.confirm`). */
  confirmed(renewal: Renewal, sentAt: number): void {
    renewal.holds++;
    renewal.deadline = Math.max(renewal.deadline, sentAt + this.leaseMs - this.driftMs);
    if (!renewal.inFlight && !this.queue.has(renewal) && !this.retrying.has(renewal)) this.schedule(renewal, sentAt + this.intervalMs);
  }

  /**
   * Called synchronously at the start of an unlock: one hold fewer; at zero, no renewal is ever sent again.
   * Returns the hold as it was when this released the last one, so that the unlock can report it lost
   * (`reportLost`) if Redis then answers that it was gone; undefined otherwise.
   */
  release(key: string, owner: string): ReleasedHold | undefined {
    const renewal = this.find(key, owner);
    if (!renewal) return undefined;
    const last = renewal.holds === 1;
    if (renewal.holds > 0) renewal.holds--;
    const released = last ? { renewal, owner: renewal.owner, deadline: renewal.deadline, lastError: renewal.lastError, controllers: renewal.watchers() } : undefined;
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
    const { name, key } = hold.renewal;
    const { owner } = hold;
    this.log.warn({ lock: name, key, owner, reason }, 'lock lost (found by its unlock)');
    this.tell(name, key, [owner], reason, controller ? [...hold.controllers, controller] : hold.controllers, late ? hold.lastError : undefined);
  }

  /**
   * Suspends the renewals of the holds of `owners` on `key` while a call that may end them or change
   * their lease is in flight (a permit release, `updateLeaseTime`): no renewal is sent for them and no
   * renewal reply or passing deadline reports them lost meanwhile. End it with the returned function:
   * `ended(owner)` says which holds the call ended (they are dropped; their handles are no longer told
   * of anything); the others are renewed again from their last renewal (at once when one was skipped).
   */
  suspend(key: string, owners: readonly string[]): (ended: (owner: string) => boolean) => void {
    const suspended: Renewal[] = [];
    for (const owner of owners) {
      const renewal = this.find(key, owner);
      if (!renewal || renewal.holds === 0) continue;
      renewal.suspended++;
      suspended.push(renewal);
    }
    return (ended) => {
      const now = monotonic();
      for (const renewal of suspended) {
        renewal.suspended--;
        if (!renewal.live) continue;
        if (ended(renewal.owner)) {
          renewal.holds = 0;
          this.dropIfIdle(renewal);
        } else if (renewal.suspended === 0 && !renewal.inFlight && !this.queue.has(renewal) && !this.retrying.has(renewal)) {
          this.schedule(renewal, now, true);
        }
      }
    };
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
      setLongTimeout(() => {
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
  attach(name: string, key: string, owner: string, controller: AbortController): void {
    const renewal = this.find(key, owner);
    if (renewal && renewal.holds > 0) renewal.watch(controller);
    else controller.abort(new LockLostError(name, this.stopped ? 'shutdown' : 'expired'));
  }

  /** Removes a handle's signal from the hold of `owner` on `key` (its handle released it). */
  detach(key: string, owner: string, controller: AbortController): void {
    this.find(key, owner)?.unwatch(controller);
  }

  /**
   * The holds of `owner` on `key` were found gone by an acquisition of the same owner (its acquire script
   * answered that Redis had no hold of it, see `holdSource`): when the watchdog still renewed them, they
   * are reported lost (`lockLost`, reason `'expired'`) as its next renewal would have, once. A registration
   * of that acquisition (`register`) stays.
   */
  holdsEnded(key: string, owner: string): void {
    const renewal = this.find(key, owner);
    if (renewal && renewal.holds > 0) this.lose(renewal, 'expired');
  }

  /** Stops renewing every hold of `key` (after `forceUnlock`). */
  forget(key: string): void {
    const entry = this.all.get(key);
    for (const renewal of entry instanceof Map ? [...entry.values()] : entry ? [entry] : []) {
      renewal.holds = 0;
      this.dropIfIdle(renewal);
    }
  }

  /** Whether the hold of `owner` on `key` is being renewed. */
  renews(key: string, owner: string): boolean {
    return (this.find(key, owner)?.holds ?? 0) > 0;
  }

  /**
   * Renews every hold now (after a reconnect or a failover): a hold that did not survive is reported lost
   * at once instead of at its next scheduled renewal.
   */
  renewAllNow(): void {
    const now = monotonic();
    for (const renewal of [...this.queue]) this.schedule(renewal, now, true);
  }

  /**
   * Stops all renewals (shutdown); the keys expire within one lease. Every hold still renewed (and not
   * being released), and every handle's explicit lease still watched, is reported lost with reason
   * `'shutdown'`: its signals abort and `lockLost` fires (once per owner).
   */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const renewed = [...this.renewals()].filter((renewal) => renewal.holds > 0 && renewal.suspended === 0);
    const leases = [...this.leases];
    for (const renewal of this.renewals()) renewal.live = false;
    this.queue.clear();
    this.retrying.clear();
    this.all.clear();
    this.count = 0;
    this.leases.clear();
    if (renewed.length + leases.length > 0) this.log.info({ renewed: renewed.length, leased: leases.length }, 'shutdown: holds given up (they expire with their leases)');
    for (const renewal of renewed) this.tell(renewal.name, renewal.key, [renewal.owner], 'shutdown', renewal.watchers());
    for (const watch of leases) {
      clearTimeout(watch.timer);
      this.tell(watch.name, watch.key, watch.owners, 'shutdown', [watch.controller]);
    }
  }

  /** @internal Drops a hold with nothing held or pending: no renewal is sent for it again. */
  dropIfIdle(renewal: Renewal): void {
    if (renewal.holds > 0 || renewal.pending > 0 || !renewal.live) return;
    renewal.live = false;
    this.unindex(renewal);
    this.queue.delete(renewal);
    this.retrying.delete(renewal);
    renewal.unwatchAll();
  }

  /** The registered hold of `owner` on `key`, if any. */
  private find(key: string, owner: string): Renewal | undefined {
    const entry = this.all.get(key);
    return entry instanceof Map ? entry.get(owner) : entry?.owner === owner ? entry : undefined;
  }

  /** Adds `renewal` to the index, in place of a hold of the same owner and key. */
  private index(renewal: Renewal): void {
    const { key, owner } = renewal;
    const entry = this.all.get(key);
    const previous = entry instanceof Map ? entry.get(owner) : entry?.owner === owner ? entry : undefined;
    if (previous) previous.live = false;
    else this.count++;
    if (entry instanceof Map) entry.set(owner, renewal);
    else if (entry && !previous) this.all.set(key, new Map([[entry.owner, entry], [owner, renewal]]));
    else this.all.set(key, renewal);
  }

  private unindex(renewal: Renewal): void {
    const entry = this.all.get(renewal.key);
    if (entry === renewal) this.all.delete(renewal.key);
    else if (entry instanceof Map && entry.get(renewal.owner) === renewal) {
      entry.delete(renewal.owner);
      if (entry.size === 1) this.all.set(renewal.key, entry.values().next().value!);
    } else return;
    this.count--;
  }

  /** Every registered hold. */
  private *renewals(): IterableIterator<Renewal> {
    for (const entry of this.all.values()) {
      if (entry instanceof Map) yield* entry.values();
      else yield entry;
    }
  }

  /** Normal renewals are appended, so `queue` stays in `nextAt` order; retries (few) are kept apart. */
  private schedule(renewal: Renewal, at: number, retry = false): void {
    renewal.nextAt = at;
    this.queue.delete(renewal);
    this.retrying.delete(renewal);
    (retry ? this.retrying : this.queue).add(renewal);
    if (at < this.timerAt) this.arm(at);
  }

  private arm(at: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = outsideContexts(() => setLongTimeout(() => this.tick(), at - monotonic()));
    this.timer.unref();
  }

  /**
   * Renews the holds that are due (or due within a quarter interval, so they share calls), at most
   * `DISPATCH_SLICE` calls' worth per event-loop turn: with 100,000 holds the rest follows on the next
   * turns instead of blocking the application while every call is built. A suspended hold is skipped
   * (its suspension reschedules it).
   */
  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = monotonic();
    const horizon = now + this.intervalMs / 4;
    const limit = DISPATCH_SLICE * this.batchSize;
    const due: Renewal[] = [];
    for (const renewal of this.queue) {
      if (renewal.nextAt > horizon || due.length >= limit) break;
      due.push(renewal);
    }
    for (const renewal of this.retrying) if (renewal.nextAt <= now) due.push(renewal);

    const batches = new Map<string, Renewal[]>();
    for (const renewal of due) {
      this.queue.delete(renewal);
      this.retrying.delete(renewal);
      if (renewal.holds === 0 || renewal.suspended > 0) continue;
      if (renewal.deadline <= now) {
        this.lose(renewal, renewal.lastError === undefined ? 'renewal-late' : 'renewal-failed', renewal.lastError);
        continue;
      }
      const group = `${renewal.slot}\u0000${renewal.kind.script.sha}`;
      const batch = batches.get(group);
      if (batch) batch.push(renewal);
      else batches.set(group, [renewal]);
    }
    for (const batch of batches.values()) {
      for (let i = 0; i < batch.length; i += this.batchSize) void this.renew(batch.slice(i, i + this.batchSize));
    }

    let earliest = this.queue.values().next().value?.nextAt ?? Infinity;
    for (const renewal of this.retrying) earliest = Math.min(earliest, renewal.nextAt);
    if (earliest < Infinity) this.arm(earliest);
  }

  private async renew(batch: Renewal[]): Promise<void> {
    const kind = batch[0].kind;
    const keys: string[] = [];
    const args: string[] = [String(this.leaseMs)];
    let earliestDeadline = Infinity;
    for (const renewal of batch) {
      renewal.inFlight = true;
      if (renewal.keys) keys.push(...renewal.keys);
      else keys.push(renewal.key);
      args.push(renewal.owner);
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
      if (!renewal.live || renewal.holds === 0) return;
      if (failure !== undefined) {
        renewal.failures++;
        renewal.lastError = failure;
        const backoff = Math.min(this.intervalMs, 50 * 2 ** renewal.failures);
        if (renewal.suspended === 0) this.schedule(renewal, Math.min(now + backoff, renewal.deadline), true);
        return;
      }
      if (Array.isArray(results) && Number(results[i]) === 1) {
        renewal.failures = 0;
        renewal.lastError = undefined;
        renewal.deadline = sentAt + this.leaseMs - this.driftMs;
        if (renewal.suspended === 0) this.schedule(renewal, sentAt + this.intervalMs);
        renewed++;
      } else {
        // Found gone: lost, unless a call that may have ended it is in flight (its outcome decides).
        if (renewal.suspended === 0) this.lose(renewal, 'expired');
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
      timer = outsideContexts(() => setLongTimeout(() => reject(new ResponseTimeoutError(ms)), ms));
      timer.unref();
    });
    return Promise.race([call, expired]).finally(() => clearTimeout(timer));
  }

  private lose(renewal: Renewal, reason: LockLostError['reason'], cause?: unknown): void {
    const controllers = renewal.watchers();
    renewal.holds = 0;
    this.dropIfIdle(renewal);
    renewal.unwatchAll();
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

/** A handle's explicit lease being watched (see `Watchdog.watchLease`). */
interface LeaseWatch {
  readonly name: string;
  readonly key: string;
  readonly owners: readonly string[];
  readonly controller: AbortController;
  timer: NodeJS.Timeout | undefined;
}
