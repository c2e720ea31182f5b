/**
 * `npm run mutation-score`'s sampling and statistics (scripts/mutation-score/sample.ts): the draw is
 * reproducible from its seed and a smaller sample is a prefix of a larger one (so `--sample 10` measures
 * the first mutants of `--sample 100`), the Wilson interval matches its textbook values, the
 * safety-relevant folders are the issue's list, and each mutant triaged equivalent is set apart from the
 * mutant set (exactly one mutant of src/ per entry, so an entry cannot rot when its code changes).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { Instrumenter } from '@stryker-mutator/instrumenter';
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

  it("the relock-sample ignorer leaves a sampled mutant to run and ignores only those nested in its range, also a nested one of the same line, mutator and replacement (src/task-holds.ts: `idle < MAX_NOTES && …` → true holds `idle < MAX_NOTES` → true)", async () => {
    const file = 'src/task-holds.ts';
    const name = join(repoRoot, file);
    const content = readFileSync(name, 'utf8');
    const at = (line: number, column: number) => ({ line: line - 1, column });
    const instrument = async (mutate: true | Array<{ start: { line: number; column: number }; end: { line: number; column: number } }>, ignorers: unknown[]) =>
      (await new Instrumenter(silent).instrument([{ name, mutate, content }], { plugins: null, excludedMutations: [], ignorers } as never)).mutants;
    const all = await instrument(true, []);
    const sampled = all.find((m) => m.mutatorName === 'ConditionalExpression' && m.replacement === 'true' && all.some((n) => n !== m && n.mutatorName === m.mutatorName && n.replacement === m.replacement && n.location.start.line === m.location.start.line && n.location.start.column === m.location.start.column && n.location.end.column < m.location.end.column))!;
    expect(sampled).toBeDefined();
    const { start, end } = sampled.location;
    const dir = mkdtempSync(join(tmpdir(), 'relock-sample-'));
    writeFileSync(join(dir, 'sample.json'), JSON.stringify([{ file, mutatorName: sampled.mutatorName, replacement: sampled.replacement, start: { line: start.line + 1, column: start.column }, end: { line: end.line + 1, column: end.column } }]));
    process.env.RELOCK_MUTATION_SAMPLE = join(dir, 'sample.json');
    // A plain JavaScript module (Stryker loads it by path): imported by a name TypeScript does not resolve.
    const plugins: string = '../../scripts/mutation-score/plugins.mjs';
    const { strykerPlugins } = (await import(plugins)) as { strykerPlugins: Array<{ value?: unknown }> };
    const run = await instrument([{ start: at(start.line + 1, start.column), end: at(end.line + 1, end.column) }], [strykerPlugins[0]!.value]);
    const key = (m: typeof sampled) => `${m.location.start.column}-${m.location.end.column} ${m.mutatorName} ${m.replacement}`;
    expect(run.filter((m) => m.status === undefined).map(key)).toContain(key(sampled));
    const nested = run.filter((m) => m.location.end.column < end.column || m.location.start.column > start.column);
    expect(nested.length).toBeGreaterThan(0);
    expect(nested.filter((m) => m.status !== 'Ignored').map(key)).toEqual([]);
  }, 60_000);
});

const silent = {
  isTraceEnabled: () => false, isDebugEnabled: () => false, isInfoEnabled: () => false,
  trace() {}, debug() {}, info() {}, warn() {}, error() {}, fatal() {},
} as never;
