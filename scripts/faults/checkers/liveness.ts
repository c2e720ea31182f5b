/**
 * C6 liveness: how long the lock stayed unusable. Recovery: from a fault that took the holder (or the
 * server) away to the next entry by another worker. Hand-off: from a section's exit to the next entry.
 * Also the longest any acquisition waited, and faults after which nobody entered again.
 *
 * With `capacity` > 1 (a semaphore's permits) the next entry does not show that the faulted holder's
 * permit came back (another permit may have been released); recovery then ends at the first entry by
 * another worker while `capacity - 1` other sections were open: every other permit was held by a live
 * section, so that entry took the freed one. An upper bound: a permit free with no one waiting for it
 * counts until someone does.
 */
import type { NemesisEvent, WorkerEvent } from '../history.js';
import { max, quantile } from '../stats.js';
import type { Section } from './sections.js';

export interface LivenessResult {
  recoveryP50Ms: number | null;
  recoveryP99Ms: number | null;
  recoveryMaxMs: number | null;
  /** Faults after which no other worker entered before the end of the run. */
  unrecovered: number;
  /** Recoveries longer than the fault plus a lease plus `RECOVERY_SLACK_MS`. */
  slowRecoveries: number;
  handoffP50Ms: number | null;
  handoffP99Ms: number | null;
  handoffMaxMs: number | null;
  maxWaitMs: number | null;
}

/** Whether the time from `n` to the next entry is a recovery time (see `NemesisEvent.recovery`). */
export function measuresRecovery(n: NemesisEvent): boolean {
  return n.recovery ?? (n.sec !== undefined || n.w === undefined);
}

/**
 * Slack on top of "fault duration + one lease" before a recovery counts as slow: the waiter's retry
 * timer, a reconnect (node-redis backs off up to 2 s after repeated failures) and a loaded machine.
 */
export const RECOVERY_SLACK_MS = 2500;

export function checkLiveness(events: readonly WorkerEvent[], nemesis: readonly NemesisEvent[], leaseMs: number, all: readonly Section[], capacity = 1): LivenessResult {
  const enters = events.filter((e): e is Extract<WorkerEvent, { ev: 'enter' }> => e.ev === 'enter').sort((a, b) => a.t - b.t);
  /** Whether entry `e` needed every permit but one to be held by others (always true for a lock). */
  const full = (e: Extract<WorkerEvent, { ev: 'enter' }>): boolean =>
    capacity === 1 || all.filter((s) => s.sec !== e.sec && s.start < e.t && s.end > e.t).length >= capacity - 1;
  const times = enters.map((e) => e.t);
  /** Index of the first entry after `t`. */
  const after = (t: number): number => {
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (times[mid] <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const recoveries: number[] = [];
  let unrecovered = 0;
  let slow = 0;
  for (const n of nemesis.filter(measuresRecovery)) {
    let i = after(n.t0);
    while (i < enters.length && ((n.w !== undefined && enters[i].w === n.w) || !full(enters[i]))) i++;
    if (i >= enters.length) {
      unrecovered++;
      continue;
    }
    const ms = enters[i].t - n.t0;
    recoveries.push(ms);
    if (ms > n.t1 - n.t0 + leaseMs + RECOVERY_SLACK_MS) slow++;
  }
  const handoffs: number[] = [];
  for (const e of events) {
    if (e.ev !== 'exit' || e.reason !== 'done') continue;
    const i = after(e.t);
    if (i < enters.length) handoffs.push(enters[i].t - e.t);
  }
  const waits = events.flatMap((e) => (e.ev === 'enter' ? [e.waitMs] : []));
  return {
    recoveryP50Ms: quantile(recoveries, 0.5),
    recoveryP99Ms: quantile(recoveries, 0.99),
    recoveryMaxMs: max(recoveries),
    unrecovered,
    slowRecoveries: slow,
    handoffP50Ms: quantile(handoffs, 0.5),
    handoffP99Ms: quantile(handoffs, 0.99),
    handoffMaxMs: max(handoffs),
    maxWaitMs: max(waits),
  };
}
