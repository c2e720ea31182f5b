/**
 * `npm run mutation-score`'s sampling and statistics (scripts/mutation-score/sample.ts): the draw is
 * reproducible from its seed and a smaller sample is a prefix of a larger one (so `--sample 10` measures
 * the first mutants of `--sample 100`), the Wilson interval matches its textbook values, and the
 * safety-relevant folders are the issue's list.
 */
import { describe, expect, it } from '@jest/globals';
import { draw, isSafetyRelevant, wilson } from '../../scripts/mutation-score/sample.js';

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
});
