/**
 * `npm run bench`: relock against its Node peers (redlock 5β, @sesamecare-oss/redlock, redis-semaphore)
 * and the floor (two bare EVALSHA round trips), side by side in one run, on one Redis: a local
 * redis-server it starts and stops, or REDIS_URL. Scenarios 1–3, 6 and 7 run every library in this
 * process in rotating rounds (figures are medians of rounds); 4, 5 and 8 run child processes.
 *
 * Options: --quick (under 2 minutes on a quiet 2-core machine); --json (one JSON line per scenario and
 * library on stdout, the progress and the tables on stderr: `npm run --silent bench -- --json`);
 * --only 1,3 (scenarios); --impl relock,floor (libraries); --docs (write the results into
 * docs/benchmarks.md and the chart into docs/benchmarks-latency.svg); --svg FILE (the chart only);
 * --commands (print each window's INFO commandstats delta per acquisition); --baseline DIR (also measure
 * relock built from the source tree DIR, as `relock-base`, in the same rounds: a before/after from one
 * run, e.g. DIR = a git worktree of main whose node_modules links to this one's).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openAdapters } from './adapters/index.js';
import { ALL_IMPLS, type Impl } from './adapters/types.js';
import { latencyChart, latencyPanels } from './chart.js';
import { openProbe } from './env.js';
import { evaluateGoals } from './goals.js';
import { environmentLine, goalsText, jsonLines, markdown, textTable, versionsLine } from './report.js';
import type { Row, Scenario } from './scenario.js';
import { contention } from './scenarios/contention.js';
import { distinctKeys } from './scenarios/distinct-keys.js';
import { manyLocks } from './scenarios/many-locks.js';
import { memory } from './scenarios/memory.js';
import { semaphore } from './scenarios/semaphore.js';
import { uncontended } from './scenarios/uncontended.js';
import { waiters } from './scenarios/waiters.js';
import { watchdog } from './scenarios/watchdog.js';

const SCENARIOS: readonly Scenario[] = [uncontended, distinctKeys, contention, waiters, watchdog, semaphore, manyLocks, memory];
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DOCS = join(ROOT, 'docs', 'benchmarks.md');
const DOCS_CHART = join(ROOT, 'docs', 'benchmarks-latency.svg');
const BEGIN = '<!-- results:begin (written by npm run bench -- --docs) -->';
const END = '<!-- results:end -->';

const { values: options } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    only: { type: 'string' },
    impl: { type: 'string' },
    docs: { type: 'boolean', default: false },
    svg: { type: 'string' },
    commands: { type: 'boolean', default: false },
    baseline: { type: 'string' },
  },
});

const list = (text: string | undefined): string[] | undefined => text?.split(',').map((s) => s.trim()).filter(Boolean);
const known: readonly Impl[] = [...ALL_IMPLS, 'relock-base'];
const impls = (list(options.impl) ?? [...ALL_IMPLS, ...(options.baseline ? ['relock-base' as const] : [])]) as Impl[];
for (const impl of impls) if (!known.includes(impl)) throw new Error(`--impl: unknown library "${impl}" (known: ${known.join(', ')})`);
const only = list(options.only)?.map(Number);
const scenarios = SCENARIOS.filter((s) => !only || only.includes(s.id));

const out = (text: string): void => void (options.json ? process.stderr : process.stdout).write(`${text}\n`);
const started = performance.now();
const progress = (message: string): void => void process.stderr.write(`  [${((performance.now() - started) / 1000).toFixed(0).padStart(3)} s] ${message}\n`);

const probe = await openProbe();
const runId = `r${Date.now().toString(36)}`;
const adapters = await openAdapters(impls, { url: probe.url, ...(options.baseline ? { baseline: options.baseline } : {}) });
try {
  const env = await probe.environment();
  out(`relock benchmark${options.quick ? ' (--quick)' : ''}: ${environmentLine(env)}`);
  out(`Libraries: ${versionsLine(env)}`);
  out(`relock measured: ${process.env.RELOCK_BENCH_SOURCE === '1' ? 'the TypeScript sources under tsx (RELOCK_BENCH_SOURCE=1)' : 'the built package, dist/esm'}.`);
  out('The machine may be shared: compare libraries within this run, not with other runs.\n');

  const results = new Map<string, Row[]>();
  const ctx = { probe, quick: options.quick, runId, impls, adapters: adapters.list, progress, commands: options.commands, ...(options.baseline ? { baseline: options.baseline } : {}) };
  for (const scenario of scenarios) {
    const rows = await scenario.run(ctx);
    results.set(scenario.key, rows);
    out(`${textTable(scenario, rows)}\n`);
  }
  const goals = evaluateGoals(results);
  out(goalsText(goals));
  out(`\nTotal ${((performance.now() - started) / 1000).toFixed(0)} s; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} at the end.`);
  if (options.json) for (const line of jsonLines(env, scenarios, results, goals)) process.stdout.write(`${line}\n`);

  const panels = latencyPanels(results);
  const caption = `${env.cpu}, ${env.cores} cores, Node ${env.node}, Redis ${env.redis}${options.quick ? ', --quick' : ''}`;
  const svgFile = options.docs ? DOCS_CHART : options.svg;
  if (svgFile && panels.length > 0) writeFileSync(svgFile, `${latencyChart(panels, caption)}\n`);
  if (options.docs) {
    const doc = readFileSync(DOCS, 'utf8');
    const begin = doc.indexOf(BEGIN);
    const end = doc.indexOf(END);
    if (begin < 0 || end < begin) throw new Error(`${DOCS} lacks the ${BEGIN} … ${END} markers`);
    const block = markdown(env, scenarios, results, goals, new Date(), options.quick, relative(dirname(DOCS), DOCS_CHART));
    writeFileSync(DOCS, `${doc.slice(0, begin + BEGIN.length)}\n${block}\n${doc.slice(end)}`);
    out(`Wrote the results into ${relative(ROOT, DOCS)} and the chart into ${relative(ROOT, DOCS_CHART)}.`);
  }
} finally {
  await probe.cleanup(runId);
  await adapters.close();
  await probe.close();
}
