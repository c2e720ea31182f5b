/**
 * `npm run mutation-score`'s sampling and statistics (scripts/mutation-score/sample.ts): the draw is
 * reproducible from its seed and a smaller sample is a prefix of a larger one (so `--sample 10` measures
 * the first mutants of `--sample 100`), the Wilson interval matches its textbook values, the
 * safety-relevant folders are the issue's list, and each mutant triaged equivalent is set apart from the
 * mutant set (exactly one mutant of src/ per entry, so an entry cannot rot when its code changes).
 */
import { describe, expect, it } from '@jest/globals';
import { EQUIVALENT, equivalentOf } from '../../scripts/mutation-score/equivalent.js';
import { allMutants, draw, isSafetyRelevant, mutantKey, originalText, wilson } from '../../scripts/mutation-score/sample.js';
import { repoRoot } from '../../scripts/mutants/scratch.js';

describe('mutation-score sample', () => {
  const items = Array.from({ length: 1000 }, (_, i) => i);

  it('draws distinct items, the same for the same seed, other ones for another seed', () => {
    const a = draw(items, 50, '2026-12-05');
    expect(new Set(a).size).toBe(50);
    expect(draw(items, 50, '2026-12-05')).toEqual(a);
    expect(draw(items, 50, '2026-12-06')).not.toEqual(a);
    expect(draw(items, 10, '2026-12-05')).toEqual(a.slice(0, 10));
    expect(draw(items, 5000, 'x')).toHaveLength(1000);
  });

  it('gives the Wilson 95 % interval', () => {
    const { low, high } = wilson(90, 100);
    expect(low).toBeCloseTo(0.8256, 3);
    expect(high).toBeCloseTo(0.9448, 3);
    expect(wilson(10, 10).high).toBe(1);
    expect(wilson(10, 10).low).toBeCloseTo(0.7225, 3);
    expect(wilson(0, 0)).toEqual({ low: 0, high: 1 });
  });

  it('counts the issue\'s folders and files as safety-relevant, and nothing else', () => {
    expect(isSafetyRelevant('src/lock/lock.ts')).toBe(true);
    expect(isSafetyRelevant('src/redis/clients/glide.ts')).toBe(true);
    expect(isSafetyRelevant('src/task-holds.ts')).toBe(true);
    expect(isSafetyRelevant('src/context.ts')).toBe(true);
    expect(isSafetyRelevant('src/cli/main.ts')).toBe(false);
    expect(isSafetyRelevant('src/locks.ts')).toBe(false);
    expect(isSafetyRelevant('src/time.ts')).toBe(false);
  });

  it('sets apart each mutant triaged equivalent: every entry is exactly one mutant of src/, and it is not drawn', async () => {
    const { mutants, equivalent } = await allMutants(repoRoot);
    expect(equivalent).toHaveLength(EQUIVALENT.length);
    for (const entry of EQUIVALENT) expect({ entry: entry.original, matches: equivalent.filter((m) => m.file === entry.file && m.replacement === entry.replacement && m.mutatorName === entry.mutatorName).length }).toEqual({ entry: entry.original, matches: 1 });
    expect(mutants.filter((m) => equivalent.some((e) => mutantKey(e) === mutantKey(m)))).toEqual([]);
    // The same mutator's other mutants on those lines stay in the set (`<=` → `>` is no boundary case).
    expect(mutants.some((m) => m.file === 'src/lock/protocol/acquire.ts' && m.replacement === 'mark.until > started')).toBe(true);
  }, 120_000);

  it('matches an entry by its code, replacement and line only', () => {
    const m = { file: 'src/redis/executor.ts', mutatorName: 'BooleanLiteral', replacement: 'true', start: { line: 1, column: 36 }, end: { line: 1, column: 41 } };
    const line = 'if (options.signal?.aborted) return false;';
    expect(originalText([line], m)).toBe('false');
    expect(equivalentOf(m, 'false', line)).toBeDefined();
    expect(equivalentOf(m, 'false', 'return false;')).toBeUndefined();
    expect(equivalentOf({ ...m, replacement: 'false' }, 'true', line)).toBeUndefined();
  });
});
