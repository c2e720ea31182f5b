/**
 * `npm run mutation-score -- --sample N [--seed S]`: a sampled mutation score from StrykerJS, a check the
 * catalogue's authors did not write (`npm run mutants` is the hand-written regression list).
 *
 * 1. Stryker's own instrumenter enumerates every mutant over src/ (sample.ts).
 * 2. N of them are drawn with a seeded generator; the seed defaults to today's date (UTC), so that
 *    nobody can tune the code to a fixed sample.
 * 3. `stryker run` (stryker.config.mjs: jest runner, ES modules, `perTest` coverage, TypeScript checker)
 *    runs exactly those: each as a `mutate` range, the mutants nested in a range ignored by the
 *    `relock-sample` ignorer (plugins.mjs), each mutant's run limited to the tests that cover it (Stryker's `perTest`
 *    coverage) and their files (covering-sequencer.cjs), and stopped at its first failing test
 *    (bail-environment.cjs).
 * 4. It prints the score over the safety-relevant folders and over the rest, each with its 95 % Wilson
 *    interval, and every survivor (file:line, mutation, original).
 *
 * Score: (killed + timed out) / (killed + timed out + survived + no coverage), Stryker's definition; a
 * mutant the TypeScript checker rejects (CompileError) is not a valid program and is left out of both
 * counts; a runtime error (the test process crashed) is reported apart. Stryker writes only under
 * `.stryker-tmp/` (ignored): its sandbox copy of the tree, the sample and `report.json`.
 *
 * Flags: `--sample N` (default 40), `--seed S` (default YYYY-MM-DD), `--list` (print the sample, run
 * nothing), `--report-only` (print the last run's results again, those of a run stopped before its end
 * included), `--tests GLOB,GLOB` (jest `testMatch` globs instead of the whole suite: a quick run, as in
 * CI, that keeps the command working; its score is not the suite's), `--concurrency C` (Stryker's
 * processes, which it splits between TypeScript checkers and jest runners: 3 gives 2 checkers and 1
 * runner, and once the checking is done the checkers' slots become runners; default 2, for 2 cores). Exits 1 if Stryker fails or a
 * sampled mutant is missing from its report.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../mutants/scratch.js';
import { allMutants, draw, isSafetyRelevant, mutantKey, originalText, type SampledMutant, wilson } from './sample.js';

interface Args {
  sample: number;
  seed: string;
  list: boolean;
  reportOnly: boolean;
  concurrency: number;
  /** Jest `testMatch` globs replacing the suite (`--tests`), for a quick run that only keeps the command working. */
  tests: string[] | undefined;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { sample: 40, seed: new Date().toISOString().slice(0, 10), list: false, reportOnly: false, concurrency: 2, tests: undefined };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = (argv[i] ?? '').split('=', 2) as [string, string | undefined];
    const value = (): string => inline ?? argv[++i] ?? '';
    if (flag === '--sample') args.sample = Number(value());
    else if (flag === '--seed') args.seed = value();
    else if (flag === '--concurrency') args.concurrency = Number(value());
    else if (flag === '--list') args.list = true;
    else if (flag === '--report-only') args.reportOnly = true;
    else if (flag === '--tests') args.tests = value().split(',').filter((glob) => glob !== '');
    else throw new Error(`unknown argument ${flag} (expected --sample N, --seed S, --concurrency C, --tests GLOBS, --list, --report-only)`);
  }
  if (!Number.isInteger(args.sample) || args.sample < 1) throw new Error('--sample takes a positive whole number');
  if (!Number.isInteger(args.concurrency) || args.concurrency < 1) throw new Error('--concurrency takes a positive whole number');
  return args;
}

const TMP = '.stryker-tmp';
const SAMPLE_FILE = join(TMP, 'sample.json');
const CONFIG_FILE = join(TMP, 'mutation-score.config.json');
const REPORT_FILE = join(TMP, 'report.json');
/** Test name → test files, recorded in the dry run by bail-environment.cjs for covering-sequencer.cjs. */
const TESTS_FILE = join(TMP, 'test-files.json');
/** Tests that failed in the dry run, one full name a line, dropped from every mutant's run (bail-environment.cjs). */
const DROPPED_FILE = join(TMP, 'dropped-tests.txt');
/** Each mutant's result as it comes (plugins.mjs, `relock-progress`): read when the run did not finish. */
const PROGRESS_FILE = join(TMP, 'progress.jsonl');

/**
 * Test files left out of Stryker's runs (jest regexes), to keep the dry run and each mutant's run short:
 * - they test the build, the docs or the scripts, not src/ through the sandbox: bench, docs, package,
 *   faults, mutation-score, cli/dist;
 * - they run relock in child processes (the `processes` and `process-exit` suites, SIGTERM, and the CLI
 *   suites that spawn `relock`): Stryker's per-test coverage only sees the jest process, so these tests
 *   never count as covering a mutant and would only be loaded for nothing;
 * - they start a Redis Cluster or Sentinel (6 to 9 servers per file): cluster, sentinel, `*-cluster`;
 *   the code only they reach is reported as not covered (a survivor): the score stays a lower bound;
 * - they repeat the ioredis adapter's suites on its other versions and fork (ioredis6, iovalkey).
 * What is left is every in-process test of src/: the core folders, the model tests, the clients'
 * contracts, the frameworks, observe, inputs and the in-process CLI tests (usage, watch, top).
 */
const IGNORED_TESTS = [
  '/test/bench/', '/test/docs/', '/test/package/', '/test/faults/', '/test/mutation-score/', '/test/cli/dist\\.test\\.ts$',
  'processes\\.test\\.ts$', '/test/lock/process-exit\\.test\\.ts$', '/test/frameworks/sigterm\\.test\\.ts$',
  '/test/cli/(cluster|force-unlock|inspect|leaders|list)\\.test\\.ts$',
  '/test/cluster/', '/test/sentinel/', '-cluster\\.test\\.ts$', '/test/fenced-resource/cluster\\.test\\.ts$',
  '/test/clients/ioredis6', '/test/clients/iovalkey',
];

async function writeConfig(sample: readonly SampledMutant[], concurrency: number, tests: string[] | undefined): Promise<void> {
  const base = ((await import(join(repoRoot, 'stryker.config.mjs'))) as { default: Record<string, unknown> }).default;
  const config = {
    ...base,
    mutate: sample.map((m) => `${m.file}:${m.start.line}:${m.start.column}-${m.end.line}:${m.end.column}`),
    plugins: ['@stryker-mutator/*', './scripts/mutation-score/plugins.mjs'],
    reporters: [...(base.reporters as string[]), 'relock-progress'],
    ignorers: ['relock-sample'],
    checkers: ['relock-sample', ...(base.checkers as string[])],
    concurrency,
    jest: {
      ...(base.jest as object),
      config: {
        testEnvironment: './scripts/mutation-score/bail-environment.cjs',
        testSequencer: '<rootDir>/scripts/mutation-score/covering-sequencer.cjs',
        testPathIgnorePatterns: IGNORED_TESTS,
        ...(tests === undefined ? {} : { testMatch: tests }),
      },
    },
    jsonReporter: { fileName: REPORT_FILE },
  };
  writeFileSync(join(repoRoot, CONFIG_FILE), JSON.stringify(config, null, 2));
}

interface ReportMutant {
  mutatorName: string;
  replacement: string;
  status: string;
  location: { start: { line: number; column: number }; end: { line: number; column: number } };
}

/**
 * The status of each mutant Stryker reported, by `mutantKey`: from its JSON report, or, for a run that
 * did not finish, from the results that came in (progress.jsonl).
 */
function readStatuses(): { statuses: Map<string, string>; complete: boolean } {
  const statuses = new Map<string, string>();
  const add = (file: string, m: ReportMutant): void => {
    // Reported columns are 1-based (mutation-testing-elements' schema), the instrumenter's 0-based.
    const start = { line: m.location.start.line, column: m.location.start.column - 1 };
    const end = { line: m.location.end.line, column: m.location.end.column - 1 };
    statuses.set(mutantKey({ file, mutatorName: m.mutatorName, replacement: m.replacement, start, end }), m.status);
  };
  if (existsSync(join(repoRoot, REPORT_FILE))) {
    const report = JSON.parse(readFileSync(join(repoRoot, REPORT_FILE), 'utf8')) as { files: Record<string, { mutants: ReportMutant[] }> };
    for (const [file, { mutants }] of Object.entries(report.files)) for (const m of mutants) add(file, m);
    return { statuses, complete: true };
  }
  const lines = existsSync(join(repoRoot, PROGRESS_FILE)) ? readFileSync(join(repoRoot, PROGRESS_FILE), 'utf8').split('\n') : [];
  for (const line of lines.filter((l) => l !== '')) {
    const m = JSON.parse(line) as ReportMutant & { file: string };
    add(m.file, m);
  }
  return { statuses, complete: false };
}

/** The source text a mutant replaces, on one line and shortened. */
function original(m: SampledMutant): string {
  return shorten(originalText(readFileSync(join(repoRoot, m.file), 'utf8').split('\n'), m));
}

function shorten(text: string): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > 100 ? `${flat.slice(0, 97)}...` : flat;
}

const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);

function summarise(label: string, results: readonly (readonly [SampledMutant, string])[]): void {
  const detected = results.filter(([, s]) => DETECTED.has(s)).length;
  const valid = results.filter(([, s]) => DETECTED.has(s) || UNDETECTED.has(s)).length;
  const counts = new Map<string, number>();
  for (const [, s] of results) counts.set(s, (counts.get(s) ?? 0) + 1);
  const { low, high } = wilson(detected, valid);
  const pct = (x: number): string => `${(100 * x).toFixed(1)} %`;
  const score = valid === 0 ? 'n/a' : pct(detected / valid);
  console.log(`${label}: ${score} (${detected}/${valid}), 95 % interval ${pct(low)}–${pct(high)}; ${[...counts].map(([s, n]) => `${s} ${n}`).join(', ')}`);
}

/** Runs Stryker on `sample`; returns how long it took, in seconds. Throws when Stryker fails. */
async function runStryker(sample: readonly SampledMutant[], { concurrency, tests }: Args): Promise<number> {
  mkdirSync(join(repoRoot, TMP), { recursive: true });
  writeFileSync(join(repoRoot, SAMPLE_FILE), JSON.stringify(sample));
  for (const file of [TESTS_FILE, PROGRESS_FILE, REPORT_FILE, DROPPED_FILE]) rmSync(join(repoRoot, file), { force: true });
  await writeConfig(sample, concurrency, tests);
  const started = Date.now();
  const env = {
    ...process.env,
    RELOCK_MUTATION_SAMPLE: join(repoRoot, SAMPLE_FILE),
    RELOCK_MUTATION_TESTS: join(repoRoot, TESTS_FILE),
    RELOCK_MUTATION_PROGRESS: join(repoRoot, PROGRESS_FILE),
    RELOCK_MUTATION_DROPPED: join(repoRoot, DROPPED_FILE),
  };
  const stryker = spawnSync('npx', ['stryker', 'run', CONFIG_FILE], { cwd: repoRoot, stdio: 'inherit', env });
  if (stryker.status !== 0) throw new Error(`stryker run exited ${stryker.status ?? stryker.signal}`);
  return (Date.now() - started) / 1000;
}

/** Prints the scores and the survivors of `sample` from what Stryker reported. */
function report(sample: readonly SampledMutant[], seed: string, seconds: number | undefined): void {
  const { statuses, complete } = readStatuses();
  const missing = sample.filter((m) => !statuses.has(mutantKey(m)));
  if (complete && missing.length > 0) throw new Error(`missing from Stryker's report: ${missing.map(mutantKey).join('; ')}`);
  const results = sample.filter((m) => statuses.has(mutantKey(m))).map((m) => [m, statuses.get(mutantKey(m)) ?? ''] as const);
  const time = seconds === undefined ? '' : ` in ${seconds.toFixed(0)} s (${(seconds / sample.length).toFixed(1)} s per mutant)`;
  console.log(`\nmutation-score: seed ${JSON.stringify(seed)}, ${results.length} of ${sample.length} sampled mutants reported${complete ? '' : ' (the run did not finish)'}${time}; Stryker ran or ignored ${statuses.size}`);
  summarise('safety-relevant', results.filter(([m]) => isSafetyRelevant(m.file)));
  summarise('rest           ', results.filter(([m]) => !isSafetyRelevant(m.file)));
  const dropped = existsSync(join(repoRoot, DROPPED_FILE)) ? readFileSync(join(repoRoot, DROPPED_FILE), 'utf8').split('\n').filter((l) => l !== '') : [];
  console.log(`tests dropped (failed in the dry run, skipped in every mutant's run): ${dropped.length}`);
  for (const name of dropped) console.log(`  ${shorten(name)}`);
  const survivors = results.filter(([, s]) => UNDETECTED.has(s));
  console.log(survivors.length === 0 ? 'no survivors' : 'survivors:');
  for (const [m, s] of survivors) {
    console.log(`  ${m.file}:${m.start.line}:${m.start.column} ${s} ${m.mutatorName}: ${shorten(m.replacement)}  (was: ${original(m)})`);
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.reportOnly) {
    const sample = JSON.parse(readFileSync(join(repoRoot, SAMPLE_FILE), 'utf8')) as SampledMutant[];
    report(sample, args.seed, undefined);
    return;
  }
  const { mutants: all, equivalent } = await allMutants(repoRoot);
  const sample = draw(all, args.sample, args.seed);
  console.log(`mutation-score: ${sample.length} of ${all.length} mutants over src/ (${equivalent.length} triaged equivalent set apart: scripts/mutation-score/equivalent.ts), seed ${JSON.stringify(args.seed)}`);
  if (args.list) {
    for (const m of sample) console.log(`  ${mutantKey(m)}`);
    return;
  }
  const seconds = await runStryker(sample, args);
  report(sample, args.seed, seconds);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
