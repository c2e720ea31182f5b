/**
 * The mutant set and the sample of `npm run mutation-score`: Stryker's own instrumenter enumerates every
 * mutant over src/ (the same mutators and options as `stryker run`), a seeded generator draws the sample,
 * and the Wilson interval turns a sampled kill ratio into a 95 % confidence interval.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Instrumenter } from '@stryker-mutator/instrumenter';
import type { Logger } from '@stryker-mutator/api/logging';
import { equivalentOf } from './equivalent.js';

/** A mutant as Stryker reports it: 1-based lines, 0-based columns (Stryker's report format). */
export interface SampledMutant {
  /** Path relative to the repository root, such as `src/lock/lock.ts`. */
  readonly file: string;
  readonly mutatorName: string;
  readonly replacement: string;
  readonly start: { readonly line: number; readonly column: number };
  readonly end: { readonly line: number; readonly column: number };
}

/** The folders and files whose mutants count as safety-relevant (the list); the rest is "other". */
export const SAFETY_RELEVANT = [
  'src/lock/', 'src/read-write-lock/', 'src/fair-lock/', 'src/fenced-lock/', 'src/semaphore/',
  'src/permit-expirable-semaphore/', 'src/count-down-latch/', 'src/multi-lock/', 'src/red-lock/',
  'src/watchdog/', 'src/pubsub/', 'src/redis/', 'src/task-holds.ts', 'src/context.ts',
];

/** Whether `file` (repository-relative) is in one of the safety-relevant folders. */
export function isSafetyRelevant(file: string): boolean {
  return SAFETY_RELEVANT.some((prefix) => file === prefix || (prefix.endsWith('/') && file.startsWith(prefix)));
}

/** A stable key for a mutant: file, range, mutator and replacement. */
export function mutantKey(m: SampledMutant): string {
  return `${m.file}:${m.start.line}:${m.start.column}-${m.end.line}:${m.end.column} ${m.mutatorName} ${m.replacement}`;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

const quietLogger = {
  isTraceEnabled: () => false, isDebugEnabled: () => false, isInfoEnabled: () => false,
  isWarnEnabled: () => false, isErrorEnabled: () => false, isFatalEnabled: () => false,
  trace() {}, debug() {}, info() {}, warn() {}, error() {}, fatal() {},
} as unknown as Logger;

/**
 * Every mutant Stryker generates over `src/` under `root`, sorted by file and position (so that a seed
 * always draws the same mutants from the same tree), without those triaged equivalent (equivalent.ts),
 * which come apart in `equivalent`.
 */
export async function allMutants(root: string): Promise<{ mutants: SampledMutant[]; equivalent: SampledMutant[] }> {
  const files = sourceFiles(join(root, 'src')).sort().map((name) => ({ name, mutate: true as const, content: readFileSync(name, 'utf8') }));
  const lines = new Map(files.map((f) => [relative(root, f.name), f.content.split('\n')]));
  const result = await new Instrumenter(quietLogger).instrument(files, { plugins: null, excludedMutations: [], ignorers: [] });
  const all = result.mutants
    .filter((m) => m.status === undefined)
    .map((m) => ({
      file: relative(root, m.fileName),
      mutatorName: m.mutatorName,
      replacement: m.replacement,
      start: { line: m.location.start.line + 1, column: m.location.start.column },
      end: { line: m.location.end.line + 1, column: m.location.end.column },
    }))
    .sort((a, b) => mutantKey(a).localeCompare(mutantKey(b)));
  const mutants: SampledMutant[] = [];
  const equivalent: SampledMutant[] = [];
  for (const m of all) {
    const text = lines.get(m.file) ?? [];
    (equivalentOf(m, originalText(text, m), (text[m.start.line - 1] ?? '').trim()) ? equivalent : mutants).push(m);
  }
  return { mutants, equivalent };
}

/** The code `m` replaces in `lines` (the file's lines), whitespace collapsed. */
export function originalText(lines: readonly string[], m: SampledMutant): string {
  const part = lines.slice(m.start.line - 1, m.end.line);
  part[part.length - 1] = (part[part.length - 1] ?? '').slice(0, m.end.column);
  part[0] = (part[0] ?? '').slice(m.start.column);
  return part.map((l) => l.trim()).join(' ').replace(/\s+/g, ' ');
}

/** A 32-bit seed from any string (FNV-1a). */
function hashSeed(seed: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** mulberry32: a small seeded generator of floats in [0, 1). */
function generator(seed: string): () => number {
  let a = hashSeed(seed);
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` distinct items of `items` drawn uniformly at random with `seed` (partial Fisher–Yates). */
export function draw<T>(items: readonly T[], n: number, seed: string): T[] {
  const pool = [...items];
  const next = generator(seed);
  const count = Math.min(n, pool.length);
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(next() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, count);
}

/** The Wilson score interval (95 %, z = 1.96) for `k` successes in `n` trials, as fractions. */
export function wilson(k: number, n: number, z = 1.96): { low: number; high: number } {
  if (n === 0) return { low: 0, high: 1 };
  const p = k / n;
  const denominator = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / denominator;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / denominator;
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}
