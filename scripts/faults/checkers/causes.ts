/**
 * Which overlaps a lease lock cannot prevent, and for how long. A second holder B entering while A still
 * believes it holds the lock is *excused* only when the scenario declares the cause (`Scenario.excuses`)
 * and the overlap lies inside the window that cause's fault opens:
 * - `holder-paused`: A's process was stopped (SIGSTOP) or its event loop blocked by the nemesis, so it
 *   could neither renew nor notice the loss. Window: from the pause's start to its end plus one lease.
 * - `holder-stalled` (always allowed): the machine stalled A's event loop by at least a watchdog interval
 *   without the nemesis (recorded by the worker's lag monitor). Window: as a pause.
 * - `redis-restarted`: Redis restarted without persistence and was back before A's lease could have
 *   ended (down for less than a lease, plus `RESTART_MARGIN_MS`), so B was granted a lock Redis had
 *   forgotten. Window: from the kill to A being told, and at the latest one loss-detection bound
 *   (`detectionBoundMs`, with the reconnect allowance) after Redis was back, plus `EXIT_SLACK_MS` for A
 *   to leave its section.
 * - `key-expired-early`: the nemesis expired the key early (a forward jump of the server clock). Window:
 *   from the expiry to A being told, at the latest one loss-detection bound later, plus `EXIT_SLACK_MS`.
 * - `unreplicated-failover`: the primary died before A's grant reached its replica (the in-process
 *   sentinel-failover scenario counts these itself).
 * Any other overlap, and any part of an overlap outside its window, is unexpected: a bug, or a promise the
 * documentation must not make.
 */
import type { NemesisEvent, WorkerEvent } from '../history.js';
import type { Section } from './sections.js';

/** How much later than the server's real start the orchestrator may see it ready. */
export const RESTART_MARGIN_MS = 200;
/** How long a holder that was told may take to leave its section (its work is aborted; one event-loop turn, on a loaded machine). */
export const EXIT_SLACK_MS = 100;
/** Slack on "told within one watchdog interval": the renewal's round trip and a loaded machine. */
export const DETECTION_SLACK_MS = 100;

export type Cause = 'holder-paused' | 'holder-stalled' | 'redis-restarted' | 'key-expired-early' | 'unreplicated-failover';

/**
 * After a Redis restart the holder's connection must come back first: node-redis's default reconnect
 * strategy waits 50·2^n ms plus up to 200 ms of jitter, so its second attempt (the first may come while
 * Redis is still down) is at most 300 ms after the first.
 */
export const RECONNECT_ALLOWANCE_MS = 300;

/**
 * Loss detection must happen within one watchdog interval (a third of the lease) plus `DETECTION_SLACK_MS`
 * of the moment the holder could know (it runs again, the key vanished), plus `RECONNECT_ALLOWANCE_MS`
 * when that moment is a Redis restart (the connection has to come back).
 */
export const detectionBoundMs = (leaseMs: number, restart = false): number => Math.round(leaseMs / 3 + DETECTION_SLACK_MS + (restart ? RECONNECT_ALLOWANCE_MS : 0));

/** A fault that may excuse overlaps of the sections it hit, and the window it opens. */
export interface Excuse {
  cause: Cause;
  t0: number;
  t1: number;
}

/** When each section's holder was told its lock was lost (`lockLost`, or its work aborted). */
export function toldTimes(events: readonly WorkerEvent[]): Map<string, number> {
  const told = new Map<string, number>();
  for (const e of events) {
    const sec = e.ev === 'lost' ? e.sec : e.ev === 'exit' && e.reason === 'lost' ? e.sec : undefined;
    if (sec !== undefined && !told.has(sec)) told.set(sec, e.t);
  }
  return told;
}

/** The faults and stalls of one run, indexed for `explain()`. */
export class Causes {
  private readonly pauses: NemesisEvent[];
  private readonly stalls: Array<{ w: string; t0: number; t1: number }>;
  /** Restarts short enough to hide the loss from a holder (back within a lease). */
  private readonly restarts: NemesisEvent[];
  private readonly allRestarts: NemesisEvent[];
  private readonly expiries: NemesisEvent[];
  private readonly bound: number;
  private readonly restartBound: number;

  constructor(
    nemesis: readonly NemesisEvent[],
    events: readonly WorkerEvent[],
    private readonly leaseMs: number,
    allowed: readonly Cause[],
    private readonly told: ReadonlyMap<string, number> = toldTimes(events),
  ) {
    const ok = (c: Cause): boolean => allowed.includes(c);
    this.pauses = ok('holder-paused') ? nemesis.filter((n) => n.kind === 'pause' || n.kind === 'block') : [];
    this.allRestarts = nemesis.filter((n) => n.kind === 'restart');
    this.restarts = ok('redis-restarted') ? this.allRestarts.filter((n) => n.t1 - n.t0 < leaseMs + RESTART_MARGIN_MS) : [];
    this.expiries = ok('key-expired-early') ? nemesis.filter((n) => n.kind === 'expire') : [];
    this.stalls = events.flatMap((e) => (e.ev === 'stall' && e.lagMs >= leaseMs / 3 ? [{ w: e.w, t0: e.t - e.lagMs, t1: e.t }] : []));
    this.bound = detectionBoundMs(leaseMs);
    this.restartBound = detectionBoundMs(leaseMs, true);
  }

  /** The excuse whose window holds the overlap of `holder` with a section entering at `at` and lasting to `end`. */
  explain(holder: Section, at: number, end: number): Excuse | undefined {
    return this.candidates(holder, at).find((x) => x.t0 <= at && end <= x.t1);
  }

  /** The excuses that would apply to `holder` at `at` if the overlap were inside their windows (for reports). */
  candidates(holder: Section, at: number): Excuse[] {
    const told = this.told.get(holder.sec) ?? Infinity;
    const out: Excuse[] = [];
    for (const p of this.pauses) if (p.w === holder.w && p.t0 < at && p.t1 > holder.start) out.push({ cause: 'holder-paused', t0: p.t0, t1: p.t1 + this.leaseMs });
    for (const r of this.restarts) {
      // A holder whose section starts before Redis is back was granted by the server that died (its entry is
      // logged after the grant's reply, which may come after the kill).
      if (holder.start <= r.t1 && r.t0 <= at) out.push({ cause: 'redis-restarted', t0: r.t0, t1: Math.min(told, r.t1 + this.restartBound) + EXIT_SLACK_MS });
    }
    for (const x of this.expiries) {
      if (x.t0 >= holder.start && x.t0 <= at) out.push({ cause: 'key-expired-early', t0: x.t0, t1: Math.min(told, x.t0 + this.bound) + EXIT_SLACK_MS });
    }
    for (const s of this.stalls) if (s.w === holder.w && s.t0 < at && s.t1 > holder.start) out.push({ cause: 'holder-stalled', t0: s.t0, t1: s.t1 + this.leaseMs });
    return out;
  }

  /** The longest window the scenario's own faults declare (null: it declares none). */
  longestWindowMs(): number | null {
    const lengths = [
      ...this.pauses.map((p) => p.t1 - p.t0 + this.leaseMs),
      ...this.restarts.map((r) => r.t1 - r.t0 + this.restartBound + EXIT_SLACK_MS),
      ...this.expiries.map(() => this.bound + EXIT_SLACK_MS),
    ];
    return lengths.length === 0 ? null : Math.round(Math.max(...lengths));
  }

  /** A counter reset (any restart without persistence) between `from` and `to`: tokens may repeat. */
  counterReset(from: number, to: number): boolean {
    return this.allRestarts.some((r) => r.t0 >= from && r.t0 <= to);
  }
}
