/**
 * C8 belief versus truth: how long a holder whose lock ended kept believing it held it. The clock starts
 * when the holder could first know: when it runs again after a pause or block by the nemesis, when Redis
 * is back (empty) after a restart, when the nemesis expired its key early. It stops when the holder is
 * told (`lockLost`, or its work aborted by the handle's signal). That time must be at most one watchdog
 * interval plus `DETECTION_SLACK_MS`, plus the reconnect allowance after a restart (`detectionBoundMs`;
 * the bound of the run's faults); a holder still inside past that bound without
 * being told is a late detection too. Losses of keys that expired by themselves are counted as well
 * (from the expiry notification), as figures. Holds without a lease (`leased` false: plain semaphore
 * permits) cannot be lost by a pause and are not judged.
 */
import type { Expiration, NemesisEvent, WorkerEvent } from '../history.js';
import { max, quantile } from '../stats.js';
import { detectionBoundMs } from './causes.js';
import type { Section } from './sections.js';

export interface BeliefResult {
  /** `lockLost` events seen. */
  losses: number;
  /** From the moment a faulted holder could know to its being told: median and max (ms). */
  lossDetectionMs: number | null;
  lossDetectionMaxMs: number | null;
  /** The bound on that time: one watchdog interval + `DETECTION_SLACK_MS`. */
  lossDetectionBoundMs: number;
  /** Faulted holders told later than the bound, or still inside past it without being told. */
  lateDetections: number;
  /** Losses reported while Redis never dropped the key (renewals failed: a false alarm, safe). */
  lossesWithoutExpiry: number;
  /** Paused past the lease and never told (neither `lockLost` nor a failed release). */
  pausedNotTold: number;
}

export function checkBelief(
  events: readonly WorkerEvent[], all: readonly Section[], nemesis: readonly NemesisEvent[], expirations: readonly Expiration[], lockKey: string, leaseMs: number,
  told: ReadonlyMap<string, number>, leased = true,
): BeliefResult {
  const restarted = nemesis.some((n) => n.kind === 'restart');
  const bound = detectionBoundMs(leaseMs, restarted);
  const releaseFailed = new Set<string>();
  for (const e of events) if (e.ev === 'release' && !e.ok) releaseFailed.add(e.sec);
  const delays: number[] = [];
  let late = 0;
  /** `holder` could know from `from` on: told within the bound, or out of its section by then. */
  const judge = (holder: Section, from: number): void => {
    const t = told.get(holder.sec);
    if (t !== undefined) {
      const delay = Math.max(0, t - from);
      delays.push(delay);
      if (delay > bound) late++;
    } else if (holder.how !== 'killed' && holder.end > from + bound) {
      late++;
    }
  };
  let notTold = 0;
  for (const n of nemesis) {
    if (n.kind === 'pause' || n.kind === 'block') {
      if (!leased || !n.sec || n.t1 - n.t0 < leaseMs) continue;
      const holder = all.find((s) => s.sec === n.sec);
      if (!holder) continue;
      if (!told.has(n.sec) && !releaseFailed.has(n.sec)) notTold++;
      else judge(holder, n.t1);
    } else if (n.kind === 'restart' || n.kind === 'expire') {
      const from = n.kind === 'restart' ? n.t1 : n.t0;
      // The holders of the lost key: inside at the fault, or (a restart) entered before Redis was back, on a
      // grant the dead server made.
      const last = n.kind === 'restart' ? n.t1 : n.t0;
      for (const holder of all) if (holder.start <= last && holder.end > n.t0) judge(holder, from);
    }
  }
  // Losses of keys that ended by themselves: how long after the expiry the holder was told (figures only).
  const ends = expirations.filter((x) => x.key === lockKey).map((x) => x.t);
  let withoutExpiry = 0;
  const ended = [...ends, ...nemesis.filter((n) => n.kind === 'restart' || n.kind === 'expire').map((n) => n.t0)];
  for (const e of events) {
    if (e.ev !== 'lost' || e.sec === undefined) continue;
    const s = all.find((x) => x.sec === e.sec);
    if (s && !ended.some((x) => x > s.start && x <= e.t + 3 * leaseMs)) withoutExpiry++;
  }
  return {
    losses: events.filter((e) => e.ev === 'lost').length,
    lossDetectionMs: quantile(delays, 0.5),
    lossDetectionMaxMs: max(delays),
    lossDetectionBoundMs: bound,
    lateDetections: late,
    lossesWithoutExpiry: withoutExpiry,
    pausedNotTold: notTold,
  };
}
