/**
 * Which overlaps a lease lock cannot prevent, and why. A second holder B entering while A still believes
 * it holds the lock is *expected* only when one of these happened to A between its entry and B's:
 * - `holder-paused`: A's process was stopped (SIGSTOP) or its event loop blocked by the nemesis, so
 *   it could neither renew nor notice the loss;
 * - `holder-stalled`: the machine stalled A's event loop by at least a third of the lease (a renewal
 *   interval) without the nemesis (the same thing, not injected: recorded by the worker's lag monitor);
 * - `redis-restarted`: Redis restarted without persistence and was back before A's lease could have
 *   ended (down for less than a lease, plus `RESTART_MARGIN_MS` because the restart is timed from the
 *   kill to the server's "ready" line), so B was granted a lock Redis had forgotten;
 * - `key-expired-early`: the nemesis expired the key early (a forward jump of the server clock);
 * - `unreplicated-failover`: the primary died before A's grant reached its replica, and the promoted
 *   replica granted the lock again (asynchronous replication; the in-process sentinel-failover scenario
 *   counts these itself, without `syncReplicas`).
 * Anything else is an unexpected overlap: a bug, or a promise the documentation must not make.
 */
import type { NemesisEvent, WorkerEvent } from '../history.js';
import type { Section } from './sections.js';

/** How much later than the server's real start the orchestrator may see it ready. */
export const RESTART_MARGIN_MS = 200;

export type Cause = 'holder-paused' | 'holder-stalled' | 'redis-restarted' | 'key-expired-early' | 'unreplicated-failover';

/** The faults and stalls of one run, indexed for `explain()`. */
export class Causes {
  private readonly pauses: NemesisEvent[];
  private readonly stalls: Array<{ w: string; t0: number; t1: number }>;
  /** Restarts short enough to hide the loss from a holder (back within a lease). */
  private readonly restarts: NemesisEvent[];
  private readonly allRestarts: NemesisEvent[];
  private readonly expiries: NemesisEvent[];

  constructor(nemesis: readonly NemesisEvent[], events: readonly WorkerEvent[], leaseMs: number) {
    this.pauses = nemesis.filter((n) => n.kind === 'pause' || n.kind === 'block');
    this.allRestarts = nemesis.filter((n) => n.kind === 'restart');
    this.restarts = this.allRestarts.filter((n) => n.t1 - n.t0 < leaseMs + RESTART_MARGIN_MS);
    this.expiries = nemesis.filter((n) => n.kind === 'expire');
    this.stalls = events.flatMap((e) => (e.ev === 'stall' && e.lagMs >= leaseMs / 3 ? [{ w: e.w, t0: e.t - e.lagMs, t1: e.t }] : []));
  }

  /** Why `holder` may still believe it holds the lock at time `at` (B's entry), or undefined. */
  explain(holder: Section, at: number): Cause | undefined {
    if (this.pauses.some((p) => p.w === holder.w && p.t0 < at && p.t1 > holder.start)) return 'holder-paused';
    if (this.restarts.some((r) => r.t0 >= holder.start && r.t0 <= at)) return 'redis-restarted';
    if (this.expiries.some((x) => x.t0 >= holder.start && x.t0 <= at)) return 'key-expired-early';
    if (this.stalls.some((s) => s.w === holder.w && s.t0 < at && s.t1 > holder.start)) return 'holder-stalled';
    return undefined;
  }

  /** A counter reset (any restart without persistence) between `from` and `to`: tokens may repeat. */
  counterReset(from: number, to: number): boolean {
    return this.allRestarts.some((r) => r.t0 >= from && r.t0 <= to);
  }
}
