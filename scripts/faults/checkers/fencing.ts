/**
 * C3 fenced resource and C4 lost updates, from the oracle's own log (the order it applied operations).
 *
 * A write accepted by the fenced resource is *stale* when another section's operation was accepted
 * between this section's first operation and its write: two holders interleaved on the resource, which is
 * exactly what fencing must prevent. With tokens that strictly increase it cannot happen (the newer
 * holder's accepted operation raises the resource's token above the older one's); it can when tokens
 * repeat, after the counter was reset by a restart without persistence (documented in docs/fencing.md):
 * such writes are counted apart, as `staleWritesAcceptedTokenReuse`. Rejected writes are the times
 * fencing stopped a stale holder.
 *
 * Lost updates: every counter set writes the value its section read plus one, so with exclusive access
 * the final value equals the number of sets; each set that overwrote a newer value loses the difference.
 */
import type { OracleOp } from '../oracle.js';

export interface FencingResult {
  /** Stale writes accepted with tokens that never repeated: a fencing failure. */
  staleWritesAccepted: number;
  /** Stale writes accepted because their token was handed out again after a counter reset. */
  staleWritesAcceptedTokenReuse: number;
  staleWritesRejected: number;
  /** Sections whose fenced enter was rejected (their token was already superseded). */
  fencedOut: number;
  lostUpdates: number;
  /** The same count on the fenced resource's value. */
  fencedLostUpdates: number;
  counterSets: number;
  examples: string[];
}

/** `reused(tok)`: whether `tok` was handed out to more than one section (a counter reset). */
export function checkFencing(ops: readonly OracleOp[], counter: number, fencedValue: number, reused: (tok: number) => boolean): FencingResult {
  /** Sections started (first operation seen, accepted or not) with no other section's accepted operation since. */
  const clean = new Set<string>();
  const interrupt = (by: string): void => {
    for (const sec of clean) if (sec !== by) clean.delete(sec);
  };
  let accepted = 0;
  let stale = 0;
  let staleReused = 0;
  let rejected = 0;
  let fencedOut = 0;
  let sets = 0;
  const examples: string[] = [];
  for (const op of ops) {
    if (op.op === 'set') {
      sets++;
    } else if (op.op === 'begin') {
      if (op.ok) interrupt(op.sec);
      else fencedOut++;
      clean.add(op.sec);
    } else if (!op.ok) {
      rejected++;
      clean.delete(op.sec);
    } else {
      accepted++;
      if (!clean.has(op.sec)) {
        if (reused(op.tok)) staleReused++;
        else stale++;
        if (examples.length < 10) examples.push(`${op.sec} wrote with token ${op.tok} after another section used the resource${reused(op.tok) ? ' (token reused after a counter reset)' : ''}`);
      }
      interrupt(op.sec);
      clean.delete(op.sec);
    }
  }
  return {
    staleWritesAccepted: stale,
    staleWritesAcceptedTokenReuse: staleReused,
    staleWritesRejected: rejected,
    fencedOut,
    lostUpdates: sets - counter,
    fencedLostUpdates: accepted - fencedValue,
    counterSets: sets,
    examples,
  };
}
