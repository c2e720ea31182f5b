import type { BatchScript } from '../redis/script.js';

/**
 * The hold lifecycle, one for every renewable or leased hold (locks and expirable permits alike):
 *
 * 1. **Registration** before the acquire is sent (`Watchdog.register` → a `WatchdogHold`), so that an unlock racing
 *    with the acquisition finds it;
 * 2. **confirmation** with the send time of the granting attempt (`hold.confirm(sentAt)`: the lease counts
 *    from there), or `hold.abandon()` when nothing was granted;
 * 3. **renewal** by the client's `Watchdog` every third of a lease, batched per kind and cluster slot;
 * 4. **loss**: a renewal finds the hold gone, its local deadline passes, or its own unlock finds it gone
 *    (`Watchdog.reportLost`): the handles' signals abort with one `LockLostError` and `lockLost` fires, once;
 * 5. **release** (`Watchdog.release`, synchronously at the start of an unlock). A call that may end the
 *    hold or change its lease (a permit release) **suspends** it meanwhile (`Watchdog.suspend`).
 *
 * A handle's signal follows its holds or its explicit lease through a `HoldSignal`. The record of a hold
 * (`Renewal`) is private to `src/watchdog/`: everything else sees the `WatchdogHold` interface. It allocates
 * lazily (no per-hold arrays, sets or id strings), so a held watchdog lock costs a few hundred bytes.
 */

/**
 * A kind of renewable hold and the script that renews a batch of them. The script gets the keys of
 * every hold in the batch (`keysPerHold` each, in order), `ARGV[1]` = lease in milliseconds, then the
 * owner of every hold (its owner id, or its permit id), and returns one integer per hold: 1 renewed, 0 gone.
 */
export interface RenewalKind {
  readonly script: BatchScript;
  readonly keysPerHold: number;
}

/**
 * How much earlier than Redis the watchdog ends a lease it could not renew, in ms: 1% of the lease plus
 * 2 ms (Redlock's clock drift factor). The client's clock and Redis's may run at slightly different rates
 * and timers fire late, so a holder must stop believing a little before Redis can expire its key.
 */
export function clockDriftMs(leaseMs: number): number {
  return leaseMs / 100 + 2;
}

const NO_CONTROLLERS: readonly AbortController[] = Object.freeze([]);

/** A registered hold, as the primitives see it (see the lifecycle above). */
export interface WatchdogHold {
  readonly owner: string;
  /** The acquisition sent at monotonic time `sentAt` was granted: renewed from a third of a lease later. */
  confirm(sentAt: number): void;
  /** The acquisition was not granted (busy, error, given up). */
  abandon(): void;
}

/** What a hold asks of the watchdog that registered it. @internal */
export interface HoldHost {
  confirmed(renewal: Renewal, sentAt: number): void;
  dropIfIdle(renewal: Renewal): void;
}

/** The renewal record of one hold: a (kind, key, owner) of this client. @internal Private to src/watchdog. */
export class Renewal implements WatchdogHold {
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
  /** In the watchdog's index (false once dropped: a late confirm or renewal reply leaves it alone). */
  live = true;
  /** Calls that may end the hold are in flight (`Watchdog.suspend`): no renewal is sent, no loss reported. */
  suspended = 0;
  lastError: unknown = undefined;
  /**
   * The signals of the handles on this hold (aborted when it is lost): none, one (most holds have at
   * most one handle), or a set of them from the second on.
   */
  private controllers: AbortController | Set<AbortController> | undefined;

  constructor(
    private readonly host: HoldHost,
    readonly kind: RenewalKind,
    readonly name: string,
    readonly key: string,
    /** Its owner id (or permit id); a revived record may take another owner's (see `revive`). */
    public owner: string,
    /** The keys the renewal script gets for this hold (shared by the holds of one object); undefined: `[key]`. */
    readonly keys: readonly string[] | undefined,
    /** Holds of one kind and slot can share a renewal call. */
    readonly slot: number,
  ) {}

  confirm(sentAt: number): void {
    this.pending--;
    if (this.live) this.host.confirmed(this, sentAt);
  }

  abandon(): void {
    this.pending--;
    this.host.dropIfIdle(this);
  }

  /** Adds the controller of a handle on this hold (aborted when it is lost). */
  watch(controller: AbortController): void {
    const current = this.controllers;
    if (current === undefined) this.controllers = controller;
    else if (current instanceof Set) current.add(controller);
    else if (current !== controller) this.controllers = new Set([current, controller]);
  }

  /** Removes a handle's controller (its handle released the hold or stopped following it). */
  unwatch(controller: AbortController): void {
    if (this.controllers === controller) this.controllers = undefined;
    else if (this.controllers instanceof Set) this.controllers.delete(controller);
  }

  /** The controllers watching the hold, now (a copy: aborting one may run code that unwatches another). */
  watchers(): readonly AbortController[] {
    const current = this.controllers;
    return current === undefined ? NO_CONTROLLERS : current instanceof Set ? [...current] : [current];
  }

  /** Forgets every handle (the hold was dropped). */
  unwatchAll(): void {
    this.controllers = undefined;
  }

  /**
   * Makes a dropped renewal new again for `Watchdog.register`, as the hold of `owner` (a lock object's next
   * contextless acquisition is a new owner: the record is reused all the same); false (and unchanged) when
   * it is still in use: registered, holding, pending, suspended, or with a renewal call in flight whose
   * reply must not touch a new hold. Nothing else keeps a dropped record by identity but `ReleasedHold`,
   * which carries its own owner.
   */
  revive(owner: string): boolean {
    if (this.holds > 0 || this.pending > 0 || this.inFlight || this.live || this.suspended > 0) return false;
    this.owner = owner;
    this.deadline = 0;
    this.nextAt = 0;
    this.failures = 0;
    this.lastError = undefined;
    this.live = true;
    return true;
  }
}

/** What `Watchdog.release()` returns when it released a renewal's last hold (see `Watchdog.reportLost`). */
export interface ReleasedHold {
  readonly renewal: Renewal;
  /** Its owner when released (the record may have been revived for another since, see `Renewal.revive`). */
  readonly owner: string;
  /** The hold's local deadline when it was released (monotonic ms). */
  readonly deadline: number;
  readonly lastError: unknown;
  /** The signals still attached to the hold when it was released. */
  readonly controllers: readonly AbortController[];
}

/** What a `HoldSignal` needs of the watchdog. @internal */
export interface HoldWatcher {
  attach(name: string, key: string, owner: string, controller: AbortController): void;
  detach(key: string, owner: string, controller: AbortController): void;
  watchLease(name: string, key: string, owners: readonly string[], controller: AbortController, sentAt: number, leaseMs: number): () => void;
}

/**
 * The signal of a handle (a lock's or expirable permits'): it follows the watchdog holds of `owners` on
 * `key` (`followRenewals`: aborts when one is lost), or an explicit lease (`followLease`: aborts a drift
 * margin before Redis can expire it, see `Watchdog.watchLease`), and aborts with `'shutdown'` when the
 * client shuts down while held. One per handle, shared by both handle builders.
 */
export class HoldSignal {
  private readonly controller = new AbortController();
  private unwatch: (() => void) | undefined;

  constructor(
    private readonly watchdog: HoldWatcher,
    private readonly name: string,
    private readonly key: string,
    private readonly owners: readonly string[],
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The controller, passed to `Watchdog.reportLost` by an unlock that finds the hold gone. */
  get abortable(): AbortController {
    return this.controller;
  }

  /** Follows the watchdog holds of the owners (aborted at once when one is no longer renewed). */
  followRenewals(): void {
    for (const owner of this.owners) this.watchdog.attach(this.name, this.key, owner, this.controller);
  }

  /** Follows an explicit lease sent at monotonic `sentAt` for `leaseMs`, instead of the previous one. */
  followLease(sentAt: number, leaseMs: number): void {
    this.unwatch?.();
    this.unwatch = this.watchdog.watchLease(this.name, this.key, this.owners, this.controller, sentAt, leaseMs);
  }

  /** Stops the lease timer, and with `renewals` stops following the watchdog holds too (a release, `stopRefresh`). */
  stop(renewals: boolean): void {
    this.unwatch?.();
    this.unwatch = undefined;
    if (renewals) for (const owner of this.owners) this.watchdog.detach(this.key, owner, this.controller);
  }
}
