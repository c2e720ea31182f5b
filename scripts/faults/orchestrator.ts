/**
 * Runs one scenario: starts its own redis-server (keyspace notifications on, so expirations are seen),
 * the workers (from the pool) and their proxies, lets the scenario's nemesis inject faults, stops
 * everything cleanly, checks hygiene, reads the histories and runs the checkers. An in-process
 * scenario (one that manages its own servers, such as the Sentinel one) fills its result itself.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis } from '../../test/support/redis.js';
import { checkBelief } from './checkers/belief.js';
import { Causes, toldTimes } from './checkers/causes.js';
import { checkExclusion } from './checkers/exclusion.js';
import { checkFencing } from './checkers/fencing.js';
import { leakCount, type HygieneFacts } from './checkers/hygiene.js';
import { checkLiveness } from './checkers/liveness.js';
import { sections } from './checkers/sections.js';
import { checkTokens } from './checkers/tokens.js';
import { now, readLog, type NemesisEvent, type WorkerEvent } from './history.js';
import { readOracle } from './oracle.js';
import { openFaultDatabase, type FaultDatabase } from './postgres.js';
import { onCleanup } from './processes.js';
import { commonViolations, emptyResult, type ScenarioResult } from './result.js';
import { connect, Run, type Suite } from './run.js';
import type { AnyScenario, History, InProcessScenario, Scenario } from './scenario.js';

/** Runs `scenario` and returns its figures. Never throws: a failure of the harness is a violation. */
export async function runScenario(scenario: AnyScenario, suite: Suite): Promise<ScenarioResult> {
  const skip = await scenario.skip?.(suite.client);
  if (skip) return { ...emptyResult(scenario), skipped: skip };
  if ('runInProcess' in scenario) return runInProcess(scenario, suite);
  const setup = scenario.setup(suite.quick);
  const id = `${scenario.name}-${randomBytes(3).toString('hex')}`;
  const dir = join(suite.baseDir, scenario.name);
  mkdirSync(dir, { recursive: true });
  const started = now();
  const redis = await startRedis({ controllable: true, args: ['--notify-keyspace-events', 'Ex', '--hz', '100', ...(setup.redisArgs ?? [])] });
  const unregister = onCleanup(() => redis.stop());
  const admin = await connect(redis.url);
  const watcher = await connect(redis.url);
  const db = setup.postgres ? await openFaultDatabase() : undefined;
  const dropDb = db ? onCleanup(() => db.drop()) : () => {};
  const run = new Run(suite.quick, id, dir, setup, redis, admin, suite, db && { db, resource: id });
  run.watcherId = Number(await watcher.clientId());
  await watcher.subscribe('__keyevent@0__:expired', (key) => run.expirations.push({ t: now(), key }));
  let runs = 0;
  const harness: string[] = [];
  let hygiene: HygieneFacts | undefined;
  let written: Awaited<ReturnType<FaultDatabase['history']>> | undefined;
  try {
    const processes = await suite.pool.take(setup.workers);
    await Promise.all(processes.map((p) => run.start(p)));
    const running = now();
    suite.progress(`  ${setup.workers} worker(s) running after ${Math.round(running - started)} ms`);
    runs = await scenario.nemesis(run);
    const finishing = now();
    suite.progress(`  faults done after ${Math.round(finishing - running)} ms`);
    hygiene = await run.finish();
    written = await db?.history();
    suite.progress(`  stopped and checked in ${Math.round(now() - finishing)} ms`);
  } catch (error) {
    harness.push(`harness: ${(error as Error).stack ?? String(error)}`);
  } finally {
    await run.close();
    await watcher.close().catch(() => watcher.destroy());
    await admin.close().catch(() => admin.destroy());
    await redis.stop();
    unregister();
    await db?.drop().catch((error: unknown) => harness.push(`harness: dropping the run's database: ${String(error)}`));
    dropDb();
  }
  const oracle = await readOracle(suite.oracle, id);
  // The workers wrote to PostgreSQL instead of the oracle: the fencing checker judges the database's history.
  if (written) Object.assign(oracle, { ops: written, fencedValue: written.length });
  const result = check(scenario, run, runs, hygiene, oracle, now() - started);
  result.violations.unshift(...harness);
  result.ok = result.violations.length === 0;
  if (result.ok) rmSync(dir, { recursive: true, force: true });
  else result.extra.artifacts = dir;
  return result;
}

function check(scenario: Scenario, run: Run, runs: number, hygiene: HygieneFacts | undefined, oracle: Awaited<ReturnType<typeof readOracle>>, durationMs: number): ScenarioResult {
  const events = [...run.workers.values()].flatMap((e) => readLog<WorkerEvent>(e.config.logFile)).sort((a, b) => a.t - b.t);
  const blocks: NemesisEvent[] = events.flatMap((e) => (e.ev === 'block' ? [{ kind: 'block' as const, t0: e.t0, t1: e.t, w: e.w, sec: e.sec }] : []));
  const nemesis = [...run.nemesis, ...blocks].sort((a, b) => a.t0 - b.t0);
  const endOfHistory = events.at(-1)?.t ?? now();
  const all = sections(events, nemesis, endOfHistory);
  const told = toldTimes(events);
  const causes = new Causes(nemesis, events, run.leaseMs, scenario.excuses ?? [], told);
  const capacity = run.setup.permits ?? 1;
  const exclusion = checkExclusion(all, causes, capacity);
  const tokens = checkTokens(all, causes);
  const issued = new Map(all.map((s) => [s.sec, s.start]));
  const fencing = checkFencing(oracle.ops, oracle.counter, oracle.fencedValue, {
    issuedAt: (sec) => issued.get(sec),
    counterReset: (a, b) => causes.counterReset(a, b),
    excused: (sec) => exclusion.excusedSections.has(sec),
  });
  const count = (ev: 'acq-fail' | 'release'): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const e of events) if (e.ev === ev && 'err' in e && e.err) out[e.err] = (out[e.err] ?? 0) + 1;
    return out;
  };
  const { examples: overlapExamples, excusedSections: _excused, ...exclusionFigures } = exclusion;
  const { examples: tokenExamples, ...tokenFigures } = tokens;
  const { examples: fencingExamples, ...fencingFigures } = fencing;
  const result: ScenarioResult = {
    scenario: scenario.name,
    title: scenario.title,
    runs,
    faultsInjected: nemesis.length,
    sections: all.length,
    leaseMs: run.leaseMs,
    capacity,
    durationMs: Math.round(durationMs),
    expectedOverlapWindowMs: causes.longestWindowMs(),
    ...exclusionFigures,
    ...tokenFigures,
    ...fencingFigures,
    ...checkLiveness(events, nemesis, run.leaseMs, all, capacity),
    ...checkBelief(events, all, nemesis, run.expirations, run.lockKey, run.leaseMs, told, run.setup.mode !== 'plain-semaphore'),
    leaks: hygiene ? leakCount(hygiene) : 0,
    hygiene,
    crashes: run.crashed.length,
    acquireErrors: count('acq-fail'),
    releaseErrors: count('release'),
    extra: { ...run.figures },
    violations: [],
    ok: true,
  };
  const history: History = { events, nemesis, expirations: [...run.expirations], lockKey: run.lockKey, leaseMs: run.leaseMs, ...(run.postgres ? { writes: oracle.ops } : {}) };
  result.violations.push(...commonViolations(result), ...(scenario.check?.(history, result) ?? []));
  if (overlapExamples.length > 0) result.extra.unexpectedOverlapExamples = overlapExamples;
  if (tokenExamples.length > 0) result.extra.tokenInversionExamples = tokenExamples;
  if (fencingExamples.length > 0) result.extra.staleWriteExamples = fencingExamples;
  return result;
}

/** Runs a scenario that manages its own servers in this process (see `InProcessScenario`). */
async function runInProcess(scenario: InProcessScenario, suite: Suite): Promise<ScenarioResult> {
  const started = now();
  const result = emptyResult(scenario);
  try {
    await scenario.runInProcess(suite.quick, result, suite.progress.bind(suite), suite.client);
  } catch (error) {
    result.violations.unshift(`harness: ${(error as Error).stack ?? String(error)}`);
  }
  result.durationMs = Math.round(now() - started);
  result.violations.push(...commonViolations(result));
  result.ok = result.violations.length === 0;
  return result;
}
