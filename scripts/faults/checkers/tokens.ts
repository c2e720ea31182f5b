/**
 * C2 token order: in order of entry, every fencing token must be higher than every earlier one. A
 * token that is not is an inversion (or a duplicate); it is explained when Redis restarted without
 * persistence in between (the counter started again), and unexpected otherwise. Sections without a
 * token (semaphore permits) are not checked.
 */
import type { Causes } from './causes.js';
import type { Section } from './sections.js';

export interface TokenResult {
  tokenInversions: number;
  unexpectedTokenInversions: number;
  duplicateTokens: number;
  examples: string[];
}

export function checkTokens(all: readonly Section[], causes: Causes): TokenResult {
  type Fenced = Section & { tok: bigint };
  let highest: Fenced | undefined;
  let inversions = 0;
  let unexpected = 0;
  const examples: string[] = [];
  const seen = new Set<bigint>();
  let duplicates = 0;
  for (const s of all.filter((x): x is Fenced => x.tok !== undefined)) {
    if (seen.has(s.tok)) duplicates++;
    seen.add(s.tok);
    if (highest && s.tok <= highest.tok) {
      inversions++;
      if (!causes.counterReset(highest.start, s.start)) {
        unexpected++;
        if (examples.length < 10) examples.push(`${s.sec} got ${s.tok} after ${highest.sec} got ${highest.tok}`);
      }
    }
    if (!highest || s.tok > highest.tok) highest = s;
  }
  return { tokenInversions: inversions, unexpectedTokenInversions: unexpected, duplicateTokens: duplicates, examples };
}
