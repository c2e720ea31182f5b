/**
 * C8 belief versus truth: how long after the lock really ended (the key expired, Redis restarted
 * empty, the nemesis expired it) its holder was told (`lockLost` / the handle's signal), and, for holders
 * paused by the nemesis, how long after they resumed. (Holders that overlapped a successor without
 * being told are the overlaps of C1.)
 */
import type { Expiration, NemesisEvent, WorkerEvent } from '../history.js';
import { max, quantile, round } from '../stats.js';
import type { Section } from './sections.js';

export interface BeliefResult {
  /** `lockLost` events seen. */
  losses: number;
  /** From the real end of the lock to the `lockLost` event (negative: told before the key expired). */
  lossDetectionMs: number | null;
  lossDetectionMaxMs: number | null;
  /** Losses reported while Redis never dropped the key (renewals failed: a false alarm, safe). */
  lossesWithoutExpiry: number;
  /** For holders paused by the nemesis: from the end of the pause to being told. */
  resumeToLossMaxMs: number | null;
  /** Paused past the lease and never told (neither `lockLost` nor a failed release). */
  pausedNotTold: number;
}

export function checkBelief(
  events: readonly WorkerEvent[], all: readonly Section[], nemesis: readonly NemesisEvent[], expirations: readonly Expiration[], lockKey: string, leaseMs: number,
): BeliefResult {
  const bySec = new Map(all.map((s) => [s.sec, s]));
  const lostBySec = new Map<string, number>();
  const releaseFailed = new Set<string>();
  for (const e of events) {
    if (e.ev === 'lost' && e.sec !== undefined && !lostBySec.has(e.sec)) lostBySec.set(e.sec, e.t);
    if (e.ev === 'release' && !e.ok) releaseFailed.add(e.sec);
  }
  const ends = [
    ...expirations.filter((x) => x.key === lockKey).map((x) => x.t),
    ...nemesis.filter((n) => n.kind === 'restart' || n.kind === 'expire').map((n) => n.t0),
  ].sort((a, b) => a - b);
  const detections: number[] = [];
  let withoutExpiry = 0;
  for (const [sec, t] of lostBySec) {
    const s = bySec.get(sec);
    if (!s) continue;
    // The key's own end: the last one before the holder was told, else (told early: renewals failed
    // while Redis was stalled) the next one.
    const end = ends.findLast((x) => x > s.start && x <= t) ?? ends.find((x) => x > t && x <= t + 3 * leaseMs);
    if (end === undefined) withoutExpiry++;
    else detections.push(t - end);
  }
  const resumes: number[] = [];
  let notTold = 0;
  for (const n of nemesis) {
    if ((n.kind !== 'pause' && n.kind !== 'block') || !n.sec || n.t1 - n.t0 < leaseMs) continue;
    const told = lostBySec.get(n.sec);
    if (told !== undefined) resumes.push(Math.max(0, told - n.t1));
    else if (!releaseFailed.has(n.sec)) notTold++;
  }
  return {
    losses: lostBySec.size,
    lossDetectionMs: quantile(detections, 0.5),
    lossDetectionMaxMs: max(detections),
    lossesWithoutExpiry: withoutExpiry,
    resumeToLossMaxMs: resumes.length ? round(Math.max(...resumes)) : null,
    pausedNotTold: notTold,
  };
}
