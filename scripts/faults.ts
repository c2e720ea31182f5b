/**
 * The fault-injection suite (`npm run faults`): runs every scenario of scripts/faults/scenarios against
 * its own redis-server with forked workers (the Sentinel scenario starts its own primary, replica and
 * sentinel and runs its clients in this process), injects faults, checks the histories, and exits
 * non-zero when an invariant that must hold is broken. See docs/reliability.md.
 *
 *   npm run faults                      full run (more iterations)
 *   npm run faults -- --quick           short run of every scenario (CI)
 *   npm run faults -- --json            one JSON line per scenario on stdout
 *   npm run faults -- --only a,b        only these scenarios
 *   npm run faults -- --report FILE     rewrite the results table in FILE (between its markers; with
 *                                       --client, the table of that client)
 *   npm run faults -- --client NAME     give relock a client of another family: ioredis, iovalkey, glide
 *                                       (default node-redis); without --only, runs the restart, network
 *                                       and failover scenarios (clients.ts)
 *   npm run faults -- --prove           run each checker on a mutant it must catch (`--only` names checkers;
 *                                       with --report FILE, rewrite the proofs table in FILE)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createClient } from 'redis';
import { startRedis } from '../test/support/redis.js';
import { CLIENT_SCENARIOS, FAULT_CLIENTS, type FaultClient } from './faults/clients.js';
import { runScenario } from './faults/orchestrator.js';
import type { Suite } from './faults/run.js';
import { cleanupAll, onCleanup, WorkerPool } from './faults/processes.js';
import { proofsMarkdown, proveAll, uncoveredCheckers } from './faults/prove.js';
import { printSummary, replaceBlock, writeReport } from './faults/report.js';
import type { ScenarioResult } from './faults/result.js';
import type { Redis } from './faults/scenario.js';
import { scenarios } from './faults/scenarios/index.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    only: { type: 'string' },
    report: { type: 'string' },
    prove: { type: 'boolean', default: false },
    client: { type: 'string', default: 'node-redis' },
  },
});
const client = values.client as FaultClient;
if (!FAULT_CLIENTS.includes(client)) {
  console.error(`unknown client: ${values.client}; known: ${FAULT_CLIENTS.join(', ')}`);
  process.exit(2);
}
if (values.prove) await proveAndExit();
const only = values.only?.split(',').map((s) => s.trim()) ?? (client === 'node-redis' ? undefined : CLIENT_SCENARIOS);
const unknown = only?.filter((name) => !scenarios.some((s) => s.name === name)) ?? [];
if (unknown.length > 0) {
  console.error(`unknown scenario(s): ${unknown.join(', ')}; known: ${scenarios.map((s) => s.name).join(', ')}`);
  process.exit(2);
}
const selected = scenarios.filter((s) => !only || only.includes(s.name));

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    console.error(`\n${signal}: stopping every process the suite started`);
    void cleanupAll().finally(() => process.exit(130));
  });
}

const progress = (message: string): void => {
  if (!values.json) console.log(message);
  else console.error(message);
};

const baseDir = mkdtempSync(join(tmpdir(), 'relock-faults-'));
const results: ScenarioResult[] = [];
const startedAt = new Date();
const loadAtStart = loadavg()[0] ?? 0;
let exitCode = 0;
try {
  const oracleServer = await startRedis({ controllable: true });
  onCleanup(() => oracleServer.stop());
  const oracle = createClient({ url: oracleServer.url });
  oracle.on('error', () => {});
  await oracle.connect();
  onCleanup(() => oracle.close().then(() => {}, () => {}));
  const suite: Suite = { quick: values.quick, client, baseDir, oracleUrl: oracleServer.url, oracle: oracle as Redis, pool: new WorkerPool(join(baseDir, 'workers.stderr.log')), progress };
  for (const scenario of selected) {
    if (interrupted) break;
    progress(`▶ ${scenario.name}: ${scenario.title}`);
    const result = await runScenario(scenario, suite);
    results.push(result);
    if (values.json) console.log(JSON.stringify(result));
    if (result.skipped) progress(`  skipped: ${result.skipped}`);
    else progress(`  ${result.ok ? 'ok' : 'FAILED'} in ${(result.durationMs / 1000).toFixed(1)} s${result.ok ? '' : `: ${result.violations.join('; ')}`}`);
  }
} catch (error) {
  if (!interrupted) console.error(error);
  exitCode = 2;
} finally {
  await cleanupAll();
}
if (interrupted) await new Promise(() => {}); // the signal handler exits once everything is stopped
if (!values.json) printSummary(results);
if (values.report) writeReport(values.report, results, { quick: values.quick, client, startedAt, loadAtStart });
const failed = results.filter((r) => !r.ok);
if (failed.length > 0) {
  console.error(`${failed.length} scenario(s) broke an invariant: ${failed.map((r) => r.scenario).join(', ')} (histories kept in ${baseDir})`);
  exitCode = 1;
} else if (exitCode === 0) {
  rmSync(baseDir, { recursive: true, force: true });
}
process.exit(exitCode);

/** `--prove`: every checker on its mutant; exits 0 only when each one failed it. */
async function proveAndExit(): Promise<never> {
  const startedAt = new Date();
  const missing = uncoveredCheckers();
  const verdicts = await proveAll(values.only?.split(',').map((s) => s.trim()), (v) => {
    if (values.json) console.log(JSON.stringify(v));
    else console.log(`${v.caught ? 'caught    ' : 'NOT CAUGHT'}  ${v.checker.padEnd(20)} ${v.scenario.padEnd(30)} mutant: ${v.mutant}\n            verdict: ${v.verdict} (${(v.durationMs / 1000).toFixed(1)} s)`);
  });
  if (values.report) replaceBlock(values.report, 'proofs', proofsMarkdown(verdicts, startedAt));
  const escaped = verdicts.filter((v) => !v.caught);
  if (missing.length > 0) console.error(`checker(s) without a proof: ${missing.join(', ')}`);
  if (escaped.length > 0) console.error(`${escaped.length} checker(s) did not fail on their mutant: ${escaped.map((v) => v.checker).join(', ')}`);
  process.exit(missing.length + escaped.length > 0 ? 1 : 0);
}
