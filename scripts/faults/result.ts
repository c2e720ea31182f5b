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
} & Omit<ExclusionResult, 'examples'> & Omit<TokenResult, 'examples'> & Omit<FencingResult, 'examples'> & LivenessResult & BeliefResult;

/** Invariants that must hold in every scenario, whatever its faults. */
export function commonViolations(r: ScenarioResult, leaseMs: number): string[] {
  const v: string[] = [];
  if (r.unexpectedOverlaps > 0) v.push(`${r.unexpectedOverlaps} unexpected overlap(s), longest ${r.maxUnexpectedOverlapMs} ms`);
  if (r.staleWritesAccepted > 0) v.push(`${r.staleWritesAccepted} stale write(s) accepted by the fenced resource`);
  if (r.unexpectedTokenInversions > 0) v.push(`${r.unexpectedTokenInversions} token inversion(s) without a counter reset`);
  if (r.lostUpdates > 0 && r.expectedOverlaps + r.unexpectedOverlaps === 0) v.push(`${r.lostUpdates} lost update(s) without any overlap`);
  if (r.leaks > 0) v.push(`${r.leaks} leak(s): ${JSON.stringify(r.hygiene)}`);
  if (r.crashes > 0) v.push(`${r.crashes} worker crash(es)`);
  if (r.pausedNotTold > 0) v.push(`${r.pausedNotTold} holder(s) paused past the lease and never told`);
  if (r.resumeToLossMaxMs !== null && r.resumeToLossMaxMs > leaseMs / 3) v.push(`a paused holder was told ${r.resumeToLossMaxMs} ms after resuming (> one watchdog interval, ${Math.round(leaseMs / 3)} ms)`);
  if (r.unrecovered > 0) v.push(`${r.unrecovered} fault(s) after which no other worker entered`);
  if (r.slowRecoveries > 0) v.push(`${r.slowRecoveries} recovery(ies) longer than the fault + one lease + ${RECOVERY_SLACK_MS} ms (max ${r.recoveryMaxMs} ms)`);
  return v;
}

/** A result with no figures yet (every count 0, every time null), for a skipped or in-process scenario. */
export function emptyResult(scenario: { name: string; title: string }): ScenarioResult {
  return {
    scenario: scenario.name, title: scenario.title, runs: 0, faultsInjected: 0, sections: 0, leaseMs: 0, durationMs: 0,
    expectedOverlaps: 0, unexpectedOverlaps: 0, maxExpectedOverlapMs: null, maxUnexpectedOverlapMs: null, causes: {}, maxOccupancy: 0,
    tokenInversions: 0, unexpectedTokenInversions: 0, duplicateTokens: 0,
    staleWritesAccepted: 0, staleWritesAcceptedTokenReuse: 0, staleWritesRejected: 0, fencedOut: 0, lostUpdates: 0, fencedLostUpdates: 0, counterSets: 0,
    recoveryP50Ms: null, recoveryP99Ms: null, recoveryMaxMs: null, unrecovered: 0, slowRecoveries: 0,
    handoffP50Ms: null, handoffP99Ms: null, handoffMaxMs: null, maxWaitMs: null,
    losses: 0, lossDetectionMs: null, lossDetectionMaxMs: null, lossesWithoutExpiry: 0, resumeToLossMaxMs: null, pausedNotTold: 0,
    leaks: 0, crashes: 0, acquireErrors: {}, releaseErrors: {}, extra: {}, violations: [], ok: true,
  };
}
