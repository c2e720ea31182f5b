/**
 * One scenario's figures (one JSON line with `--json`) and the invariants every scenario must keep. A
 * violation makes the suite exit non-zero.
 */
import type { BeliefResult } from './checkers/belief.js';
import type { ExclusionResult } from './checkers/exclusion.js';
import type { FencingResult } from './checkers/fencing.js';
import type { HygieneFacts } from './checkers/hygiene.js';
import { RECOVERY_SLACK_MS, type LivenessResult } from './checkers/liveness.js';
import type { TokenResult } from './checkers/tokens.js';

export type ScenarioResult = {
  scenario: string;
  title: string;
  /** Why the scenario did not run, when it did not. */
  skipped?: string;
  /** Fault iterations, and faults injected (a SIGSTOP + SIGCONT is one). */
  runs: number;
  faultsInjected: number;
  /** Critical sections entered. */
  sections: number;
  leaseMs: number;
  /** Sections that may be open at once (a semaphore's permits; 1 for a lock). */
  capacity: number;
  /** The longest overlap window the scenario's faults declare (null: it excuses no overlap). */
  expectedOverlapWindowMs: number | null;
  durationMs: number;
  leaks: number;
  hygiene?: HygieneFacts;
  /** Workers that died without being killed (an unhandled rejection, a crash). */
  crashes: number;
  acquireErrors: Record<string, number>;
  releaseErrors: Record<string, number>;
  /** Scenario-specific figures. */
  extra: Record<string, unknown>;
  violations: string[];
  ok: boolean;
} & Omit<ExclusionResult, 'examples' | 'excusedSections'> & Omit<TokenResult, 'examples'> & Omit<FencingResult, 'examples'> & LivenessResult & BeliefResult;

/**
 * The checkers, as named in violations (`<checker>: <what>`), in `--prove` and in docs/reliability.md.
 * Every violation a checker reports starts with its name.
 */
export const CHECKERS = {
  exclusion: 'C1 mutual exclusion: an overlap no declared fault excuses, or one that outlasts its window',
  tokens: 'C2 token order: a fencing token not above every earlier one, without a counter reset',
  fencing: 'C3 fenced resource: a stale write (lower token than one accepted, or one another holder used first) accepted without a counter reset',
  'lost-updates': 'C4 lost updates: counter updates lost by sections in no excused overlap',
  'fenced-lost-updates': 'C4 fenced lost updates: fenced writes lost without an excused stale write',
  occupancy: 'C5 occupancy: more sections open than the primitive allows (permits) outside excused windows, or permits not all back at the end',
  liveness: 'C6 liveness: no entry after a fault, or recovery slower than the fault + one lease + slack',
  starvation: 'C6 starvation: a waiter that never entered where the scenario promises every waiter enters',
  hygiene: 'C7 hygiene: keys, subscriptions, watchdog entries or timers left behind, or a worker crash',
  belief: 'C8 belief: a faulted holder told later than one watchdog interval + 100 ms after it could know',
} as const;

export type Checker = keyof typeof CHECKERS;

/** A violation reported by `checker`. */
export const violation = (checker: Checker, text: string): string => `${checker}: ${text}`;

/** The checkers whose violations `r` holds (harness failures are not a checker's). */
export function failedCheckers(r: Pick<ScenarioResult, 'violations'>): Checker[] {
  const names = Object.keys(CHECKERS) as Checker[];
  return names.filter((c) => r.violations.some((v) => v.startsWith(`${c}: `)));
}

/** Invariants that must hold in every scenario, whatever its faults. */
export function commonViolations(r: ScenarioResult): string[] {
  const v: string[] = [];
  if (r.unexpectedOverlaps > 0) v.push(violation(r.capacity > 1 ? 'occupancy' : 'exclusion', `${r.unexpectedOverlaps} unexpected overlap(s), longest ${r.maxUnexpectedOverlapMs} ms`));
  if (r.staleWritesAccepted > 0) v.push(violation('fencing', `${r.staleWritesAccepted} stale write(s) accepted by the fenced resource`));
  if (r.unexpectedTokenInversions > 0) v.push(violation('tokens', `${r.unexpectedTokenInversions} token inversion(s) without a counter reset`));
  if (r.unexcusedLostUpdates > 0) v.push(violation('lost-updates', `${r.unexcusedLostUpdates} update(s) lost outside any excused overlap`));
  if (r.fencedLostUpdates !== 0 && r.staleWritesAcceptedTokenReuse === 0) v.push(violation('fenced-lost-updates', `${r.fencedLostUpdates} fenced update(s) lost without an excused stale write`));
  if (r.leaks > 0) v.push(violation('hygiene', `${r.leaks} leak(s): ${JSON.stringify(r.hygiene)}`));
  if (r.crashes > 0) v.push(violation('hygiene', `${r.crashes} worker crash(es)`));
  if (r.pausedNotTold > 0) v.push(violation('belief', `${r.pausedNotTold} holder(s) paused past the lease and never told`));
  if (r.lateDetections > 0) v.push(violation('belief', `${r.lateDetections} holder(s) told later than ${r.lossDetectionBoundMs} ms after they could know (max ${r.lossDetectionMaxMs} ms)`));
  if (r.unrecovered > 0) v.push(violation('liveness', `${r.unrecovered} fault(s) after which no other worker entered`));
  if (r.slowRecoveries > 0) v.push(violation('liveness', `${r.slowRecoveries} recovery(ies) longer than the fault + one lease + ${RECOVERY_SLACK_MS} ms (max ${r.recoveryMaxMs} ms)`));
  return v;
}

/** A result with no figures yet (every count 0, every time null), for a skipped or in-process scenario. */
export function emptyResult(scenario: { name: string; title: string }): ScenarioResult {
  return {
    scenario: scenario.name, title: scenario.title, runs: 0, faultsInjected: 0, sections: 0, leaseMs: 0, capacity: 1, durationMs: 0,
    expectedOverlapWindowMs: null, expectedOverlaps: 0, unexpectedOverlaps: 0, maxExpectedOverlapMs: null, maxUnexpectedOverlapMs: null, causes: {},
    excusedOverlapMs: 0, maxOccupancy: 0,
    tokenInversions: 0, unexpectedTokenInversions: 0, duplicateTokens: 0,
    staleWritesAccepted: 0, staleWritesAcceptedTokenReuse: 0, staleWritesRejected: 0, fencedOut: 0, lostUpdates: 0, unexcusedLostUpdates: 0,
    fencedLostUpdates: 0, counterSets: 0,
    recoveryP50Ms: null, recoveryP99Ms: null, recoveryMaxMs: null, unrecovered: 0, slowRecoveries: 0,
    handoffP50Ms: null, handoffP99Ms: null, handoffMaxMs: null, maxWaitMs: null,
    losses: 0, lossDetectionMs: null, lossDetectionMaxMs: null, lossDetectionBoundMs: 0, lateDetections: 0, lossesWithoutExpiry: 0, pausedNotTold: 0,
    leaks: 0, crashes: 0, acquireErrors: {}, releaseErrors: {}, extra: {}, violations: [], ok: true,
  };
}
