/**
 * C1 mutual exclusion and C5 occupancy: every pair of overlapping critical sections of one lock, with the
 * overlap in milliseconds, split into expected (explained by a fault a lease cannot survive, see
 * causes.ts) and unexpected; and the largest number of sections open at once.
 *
 * With `capacity` > 1 (a semaphore's permits) only occupancy above it counts: a section entering while
 * `capacity` or more are open overlaps the ones that end first, one pair per section too many, each for
 * as long as that excess lasted. With a capacity of 1 that is every pair of overlapping sections. Sections
 * of a read-write lock carry their side: two readers never conflict, a writer conflicts with everyone.
 *
 * An overlap is excused only inside the window of a fault the scenario declares (causes.ts).
 */
import { max, round } from '../stats.js';
import type { Cause, Causes } from './causes.js';
import type { Section } from './sections.js';

export interface Overlap {
  first: string;
  second: string;
  ms: number;
  /** The excuse (undefined: unexpected). */
  cause: Cause | undefined;
  /** For an unexpected overlap: the causes that applied but whose window it outlasted. */
  outside?: Cause[];
}

export interface ExclusionResult {
  expectedOverlaps: number;
  unexpectedOverlaps: number;
  maxExpectedOverlapMs: number | null;
  maxUnexpectedOverlapMs: number | null;
  /** Expected overlaps by cause. */
  causes: Partial<Record<Cause, number>>;
  /** Total length of the excused overlaps (ms). */
  excusedOverlapMs: number;
  maxOccupancy: number;
  /** The unexpected overlaps (at most 10), for the failure report. */
  examples: Overlap[];
  /** Sections in an excused overlap (their lost updates are excused). */
  excusedSections: Set<string>;
}

export function checkExclusion(all: readonly Section[], causes: Causes, capacity = 1): ExclusionResult {
  const overlaps: Overlap[] = [];
  const open: Section[] = [];
  let maxOccupancy = 0;
  for (const s of all) {
    for (let i = open.length - 1; i >= 0; i--) if (open[i].end <= s.start) open.splice(i, 1);
    const rivals = s.mode === 'r' ? open.filter((o) => o.mode === 'w') : open;
    const excess = [...rivals].sort((a, b) => a.end - b.end).slice(0, Math.max(0, rivals.length - capacity + 1));
    for (const holder of excess) {
      const end = Math.min(holder.end, s.end);
      const cause = causes.explain(holder, s.start, end)?.cause;
      const outside = cause ? undefined : causes.candidates(holder, s.start).map((c) => c.cause);
      overlaps.push({ first: holder.sec, second: s.sec, ms: round(end - s.start), cause, ...(outside?.length ? { outside } : {}) });
    }
    open.push(s);
    maxOccupancy = Math.max(maxOccupancy, open.length);
  }
  const expected = overlaps.filter((o) => o.cause !== undefined);
  const unexpected = overlaps.filter((o) => o.cause === undefined);
  const byCause: Partial<Record<Cause, number>> = {};
  for (const o of expected) byCause[o.cause!] = (byCause[o.cause!] ?? 0) + 1;
  return {
    expectedOverlaps: expected.length,
    unexpectedOverlaps: unexpected.length,
    maxExpectedOverlapMs: max(expected.map((o) => o.ms)),
    maxUnexpectedOverlapMs: max(unexpected.map((o) => o.ms)),
    causes: byCause,
    excusedOverlapMs: round(expected.reduce((sum, o) => sum + o.ms, 0)),
    maxOccupancy,
    examples: unexpected.slice(0, 10),
    excusedSections: new Set(expected.flatMap((o) => [o.first, o.second])),
  };
}
