/**
 * C3 fenced resource and C4 lost updates, judged from the oracle's log (every attempt, in the order the
 * oracle applied it, with its token, writer, time and the resource's answer). The resource's own policy
 * is not trusted: the checker applies its own rules to the log, so an oracle that accepts a stale write is
 * caught like a lock that hands out a stale token.
 *
 * A write is *stale* when its token is lower than one the resource already accepted, or equal to one it
 * already accepted from another section (another holder used that token first). A stale write is
 * *excused* (counted as `staleWritesAcceptedTokenReuse`) only when the history holds a counter reset
 * between the issue of the two tokens in conflict (a Redis restart without persistence: the fencing
 * counter started again, documented in docs/fencing.md); every other stale write the resource accepted
 * is `staleWritesAccepted` and fails the run. Stale writes the resource rejected are the times fencing
 * saved it.
 *
 * Lost updates: every counter set writes the value its section read plus one, so a set that does not
 * write the current value plus one overwrote newer ones and lost the difference. A loss is excused only
 * when the section that wrote it is in an excused overlap (see exclusion.ts); the rest fail the run.
 * Fenced lost updates (accepted fenced writes minus the resource's final value) must be 0 unless an
 * excused stale write was accepted.
 */
import type { OracleOp } from '../oracle.js';

export interface FencingResult {
  /** Stale writes the resource accepted without a counter reset to excuse them: a fencing failure. */
  staleWritesAccepted: number;
  /** Stale writes the resource accepted because a counter reset handed a token out again (excused). */
  staleWritesAcceptedTokenReuse: number;
  /** Stale writes the resource rejected (fencing stopped a stale holder). */
  staleWritesRejected: number;
  /** Sections whose fenced enter was rejected (their token was already superseded). */
  fencedOut: number;
  /** Counter updates lost, in total. */
  lostUpdates: number;
  /** Counter updates lost by sections that are in no excused overlap (must be 0). */
  unexcusedLostUpdates: number;
  /** The same count on the fenced resource's value (must be 0 without an excused stale write). */
  fencedLostUpdates: number;
  counterSets: number;
  examples: string[];
}

/** What the checker knows besides the log. */
export interface FencingContext {
  /** When a section was issued its token (its entry), by section id. */
  issuedAt(sec: string): number | undefined;
  /** A counter reset (restart without persistence) between two times, in either order. */
  counterReset(a: number, b: number): boolean;
  /** Whether the section is in an excused overlap (its lost updates are excused). */
  excused(sec: string): boolean;
}

export function checkFencing(ops: readonly OracleOp[], counter: number, fencedValue: number, ctx: FencingContext): FencingResult {
  /** The highest token accepted so far and the section that used it first. */
  let highest: { tok: number; sec: string } | undefined;
  let stale = 0;
  let staleReused = 0;
  let rejectedStale = 0;
  let fencedOut = 0;
  let sets = 0;
  let accepted = 0;
  let value = 0;
  let unexcusedLost = 0;
  const examples: string[] = [];
  const when = (op: OracleOp): number => ctx.issuedAt(op.sec) ?? op.t;
  for (const op of ops) {
    if (op.op === 'set') {
      sets++;
      if (op.value <= value) {
        if (!ctx.excused(op.sec)) {
          unexcusedLost += value + 1 - op.value;
          if (examples.length < 10) examples.push(`${op.sec} set the counter to ${op.value} over ${value}: ${value + 1 - op.value} update(s) lost outside any excused overlap`);
        }
      }
      value = op.value;
      continue;
    }
    const conflict = highest && (op.tok < highest.tok || (op.tok === highest.tok && highest.sec !== op.sec)) ? highest : undefined;
    if (op.op === 'begin' && !op.ok) fencedOut++;
    if (op.op === 'write' && conflict) {
      const issued = when(op);
      const conflictIssued = ctx.issuedAt(conflict.sec) ?? issued;
      const reset = ctx.counterReset(Math.min(issued, conflictIssued), Math.max(issued, conflictIssued));
      if (!op.ok) rejectedStale++;
      else if (reset) staleReused++;
      else {
        stale++;
        if (examples.length < 10) examples.push(`${op.sec} wrote with token ${op.tok} after ${conflict.sec} used token ${conflict.tok}, and the resource accepted it`);
      }
    }
    if (op.op === 'write' && op.ok) accepted++;
    if (op.ok && (!highest || op.tok > highest.tok)) highest = { tok: op.tok, sec: op.sec };
  }
  return {
    staleWritesAccepted: stale,
    staleWritesAcceptedTokenReuse: staleReused,
    staleWritesRejected: rejectedStale,
    fencedOut,
    lostUpdates: sets - counter,
    unexcusedLostUpdates: unexcusedLost,
    fencedLostUpdates: accepted - fencedValue,
    counterSets: sets,
    examples,
  };
}
