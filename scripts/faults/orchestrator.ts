/**
 * Runs one scenario: starts its own redis-server (keyspace notifications on, so expirations are seen),
 * the workers (from the pool) and their proxies, lets the scenario's nemesis inject faults, stops
 * everything cleanly, checks hygiene, reads the histories and runs the checkers.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from 'redis';
import { startRedis, type RedisServer } from '../../test/support/redis.js';
import { checkBelief } from './checkers/belief.js';
import { Causes } from './checkers/causes.js';
import { checkExclusion } from './checkers/exclusion.js';
import { checkFencing } from './checkers/fencing.js';
import { keyFacts, leakCount, relockSubscribers, type HygieneFacts } from './checkers/hygiene.js';
import { checkLiveness } from './checkers/liveness.js';
import { sections } from './checkers/sections.js';
import { checkTokens } from './checkers/tokens.js';
import { now, readLog, type Expiration, type NemesisEvent, type WorkerEvent } from './history.js';
import { readOracle } from './oracle.js';
import { onCleanup, type WorkerPool, type WorkerProcess } from './processes.js';
import { Proxy } from './proxy.js';
import { commonViolations, type ScenarioResult } from './result.js';
import type { Entry, History, Redis, RunContext, Scenario, Setup } from './scenario.js';
import type { WorkerConfig, WorkerMessage } from './worker.js';

/** What every scenario of one suite run shares. */
export interface Suite {
  quick: boolean;
  /** Per-run directories go below it (kept when a scenario fails). */
  baseDir: string;
  oracleUrl: string;
  oracle: Redis;
  pool: WorkerPool;
  progress(message: string): void;
}

const connect = async (url: string): Promise<Redis> => {
  const client = createClient({ url });
  client.on('error', () => {});
  await client.connect();
  return client as Redis;
};

/** Waits for `check` to be true, polling every 50 ms, for up to `ms`. */
async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check()) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** The state of one running scenario, as its nemesis sees it (`RunContext`). */
class Run implements RunContext {
  readonly leaseMs: number;
  readonly lockKey: string;
  readonly nemesis: NemesisEvent[] = [];
  readonly expirations: Expiration[] = [];
  readonly figures: Record<string, unknown> = {};
  readonly workers = new Map<string, { process: WorkerProcess; config: WorkerConfig; proxy?: Proxy }>();
  /** Workers that exited without being killed by the nemesis or shut down. */
  readonly crashed: string[] = [];
  watcherId = -1;
  private readonly open = new Map<string, Entry>();
  private readonly enterWaiters = new Set<{ filter: (e: Entry) => boolean; resolve: (e: Entry) => void }>();
  private readonly exitWaiters = new Map<string, (t: number) => void>();
  private readonly messages: Array<{ w: string; message: WorkerMessage }> = [];
  private messageWaiters = new Set<() => void>();
  private nextId = 0;
  private finishing = false;
  /** Removes this run's listeners from the worker processes (they go back to the pool). */
  private readonly detach: Array<() => void> = [];

  constructor(
    readonly quick: boolean,
    readonly id: string,
    readonly dir: string,
    readonly setup: Setup,
    readonly redis: RedisServer,
    readonly admin: Redis,
    private readonly suite: Suite,
  ) {
    this.leaseMs = setup.leaseMs;
    this.lockKey = `faults:{${id}}`;
  }

  record(event: NemesisEvent): void {
    this.nemesis.push(event);
  }

  holder(): Entry | undefined {
    let latest: Entry | undefined;
    for (const e of this.open.values()) if (!latest || e.t > latest.t) latest = e;
    return latest;
  }

  nextEnter(timeoutMs: number, filter: (e: Entry) => boolean = () => true): Promise<Entry> {
    return new Promise((resolve, reject) => {
      const waiter = { filter, resolve: (e: Entry) => (clearTimeout(timer), resolve(e)) };
      const timer = setTimeout(() => {
        this.enterWaiters.delete(waiter);
        reject(new Error(`no matching entry within ${timeoutMs} ms`));
      }, timeoutMs);
      this.enterWaiters.add(waiter);
    });
  }

  nextExit(sec: string, timeoutMs: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.exitWaiters.delete(sec);
        reject(new Error(`section ${sec} did not exit within ${timeoutMs} ms`));
      }, timeoutMs);
      this.exitWaiters.set(sec, (t) => (clearTimeout(timer), resolve(t)));
    });
  }

  worker(w: string): WorkerProcess {
    const entry = this.workers.get(w);
    if (!entry) throw new Error(`no worker ${w}`);
    return entry.process;
  }

  proxy(w: string): Proxy {
    const proxy = this.workers.get(w)?.proxy;
    if (!proxy) throw new Error(`worker ${w} has no proxy`);
    return proxy;
  }

  workerIds(): string[] {
    return [...this.workers.entries()].filter(([, e]) => e.process.alive && !e.process.killed).map(([w]) => w);
  }

  async spawn(): Promise<string> {
    const [process] = await this.suite.pool.take(1);
    return this.start(process!);
  }

  async message(w: string, type: string, timeoutMs: number): Promise<Record<string, unknown>> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const i = this.messages.findIndex((m) => m.w === w && m.message.type === type);
      if (i >= 0) return this.messages.splice(i, 1)[0]!.message as unknown as Record<string, unknown>;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`worker ${w} sent no "${type}" within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.messageWaiters.add(() => (clearTimeout(timer), resolve()));
      });
    }
  }

  /** Starts a run on `process` under a new worker id. */
  async start(process: WorkerProcess): Promise<string> {
    const w = `w${++this.nextId}`;
    const { setup } = this;
    const proxy = setup.proxy ? await Proxy.start(this.redis.port) : undefined;
    const config: WorkerConfig = {
      w, mode: setup.mode ?? 'mutex', url: proxy?.url ?? this.redis.url, oracleUrl: this.suite.oracleUrl, run: this.id,
      logFile: join(this.dir, `${w}.jsonl`), lockName: this.lockKey, leaseMs: setup.leaseMs, responseTimeoutMs: setup.responseTimeoutMs,
      waiters: setup.waiters ?? 1, workMs: setup.workMs ?? [60, 150], thinkMs: setup.thinkMs ?? [5, 30],
      notify: (setup.waiters ?? 1) === 1, checkHolds: setup.checkHolds ?? false,
      count: setup.count, holdMs: setup.holdMs, concurrency: setup.concurrency,
    };
    this.workers.set(w, { process, config, proxy });
    this.detach.push(process.on((message) => this.onMessage(w, message)));
    void process.exited.then(() => {
      if (!process.killed && !this.finishing) this.crashed.push(w);
    });
    await process.run(config);
    return w;
  }

  private onMessage(w: string, message: WorkerMessage): void {
    if (message.type === 'enter') {
      const entry = { w, sec: message.sec, t: message.t };
      this.open.set(message.sec, entry);
      for (const waiter of [...this.enterWaiters]) {
        if (waiter.filter(entry)) {
          this.enterWaiters.delete(waiter);
          waiter.resolve(entry);
        }
      }
    } else if (message.type === 'exit') {
      this.open.delete(message.sec);
      this.exitWaiters.get(message.sec)?.(message.t);
      this.exitWaiters.delete(message.sec);
    } else if (message.type === 'held' || message.type === 'released') {
      this.messages.push({ w, message });
      for (const wake of [...this.messageWaiters]) wake();
      this.messageWaiters.clear();
    }
  }

  /** Heals every fault still on, stops the workers and collects the hygiene facts. */
  async finish(): Promise<HygieneFacts> {
    const live = [...this.workers.entries()].filter(([, e]) => e.process.alive && !e.process.killed);
    for (const [, e] of live) {
      if (e.process.paused) e.process.signal('SIGCONT');
      e.proxy?.disarm();
      e.proxy?.setMode({ kind: 'pass' });
    }
    const stuck: string[] = [];
    let relockHolds = 0;
    let relockSubscriptions = 0;
    let timersLeft = 0;
    let transientTimers = 0;
    const stopMs = 3 * this.leaseMs + 15_000;
    await Promise.all(live.map(async ([w, e]) => {
      const idle = e.process.next('idle', stopMs);
      e.process.send({ cmd: 'stop' });
      try {
        const m = await idle;
        relockHolds += m.watchdogHolds;
        relockSubscriptions += m.subscriptions;
      } catch {
        stuck.push(w);
      }
    }));
    let subscribers = 0;
    await until(async () => (subscribers = await relockSubscribers(this.admin)) === 0, 2000);
    this.finishing = true;
    await Promise.all(live.map(async ([w, e]) => {
      if (stuck.includes(w)) return;
      const done = e.process.next('done', 10_000);
      e.process.send({ cmd: 'shutdown' });
      try {
        const report = await done;
        timersLeft += report.timers;
        transientTimers += report.timersAtShutdown - report.timers;
        this.suite.pool.give(e.process);
      } catch {
        stuck.push(w);
      }
    }));
    // After shutdown (which deletes pending unlock latches): what is left must expire within a lease.
    const keys = await keyFacts(this.admin, `${this.lockKey}*`, this.leaseMs + 2000);
    for (const w of stuck) await this.worker(w).kill();
    return { ...keys, subscribers, relockHolds, relockSubscriptions, timersLeft, transientTimers, stuckWorkers: stuck };
  }

  async close(): Promise<void> {
    this.finishing = true;
    for (const off of this.detach) off();
    for (const e of this.workers.values()) {
      await e.proxy?.close();
      if (e.process.alive && (e.process.killed || e.process.paused)) await e.process.kill();
    }
  }
}

/** Runs `scenario` and returns its figures. Never throws: a failure of the harness is a violation. */
export async function runScenario(scenario: Scenario, suite: Suite): Promise<ScenarioResult> {
  const skip = scenario.skip?.();
  if (skip) return skipped(scenario, skip);
  const setup = scenario.setup(suite.quick);
  const id = `${scenario.name}-${randomBytes(3).toString('hex')}`;
  const dir = join(suite.baseDir, scenario.name);
  mkdirSync(dir, { recursive: true });
  const started = now();
  const redis = await startRedis({ controllable: true, args: ['--notify-keyspace-events', 'Ex', '--hz', '100', ...(setup.redisArgs ?? [])] });
  const unregister = onCleanup(() => redis.stop());
  const admin = await connect(redis.url);
  const watcher = await connect(redis.url);
  const run = new Run(suite.quick, id, dir, setup, redis, admin, suite);
  run.watcherId = Number(await watcher.clientId());
  await watcher.subscribe('__keyevent@0__:expired', (key) => run.expirations.push({ t: now(), key }));
  let runs = 0;
  const harness: string[] = [];
  let hygiene: HygieneFacts | undefined;
  try {
    const processes = await suite.pool.take(setup.workers);
    await Promise.all(processes.map((p) => run.start(p)));
    const running = now();
    suite.progress(`  ${setup.workers} worker(s) running after ${Math.round(running - started)} ms`);
    runs = await scenario.nemesis(run);
    const finishing = now();
    suite.progress(`  faults done after ${Math.round(finishing - running)} ms`);
    hygiene = await run.finish();
    suite.progress(`  stopped and checked in ${Math.round(now() - finishing)} ms`);
  } catch (error) {
    harness.push(`harness: ${(error as Error).stack ?? String(error)}`);
  } finally {
    await run.close();
    await watcher.close().catch(() => watcher.destroy());
    await admin.close().catch(() => admin.destroy());
    await redis.stop();
    unregister();
  }
  const result = check(scenario, run, runs, hygiene, await readOracle(suite.oracle, id), now() - started);
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
  const causes = new Causes(nemesis, events, run.leaseMs);
  const exclusion = checkExclusion(all, causes);
  const tokens = checkTokens(all, causes);
  const tokenUses = new Map<number, number>();
  for (const s of all) tokenUses.set(Number(s.tok), (tokenUses.get(Number(s.tok)) ?? 0) + 1);
  const fencing = checkFencing(oracle.ops, oracle.counter, oracle.fencedValue, (tok) => (tokenUses.get(tok) ?? 0) > 1);
  const count = (ev: 'acq-fail' | 'release'): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const e of events) if (e.ev === ev && 'err' in e && e.err) out[e.err] = (out[e.err] ?? 0) + 1;
    return out;
  };
  const { examples: overlapExamples, ...exclusionFigures } = exclusion;
  const { examples: tokenExamples, ...tokenFigures } = tokens;
  const { examples: fencingExamples, ...fencingFigures } = fencing;
  const result: ScenarioResult = {
    scenario: scenario.name,
    title: scenario.title,
    runs,
    faultsInjected: nemesis.length,
    sections: all.length,
    leaseMs: run.leaseMs,
    durationMs: Math.round(durationMs),
    ...exclusionFigures,
    ...tokenFigures,
    ...fencingFigures,
    ...checkLiveness(events, nemesis, run.leaseMs),
    ...checkBelief(events, all, nemesis, run.expirations, run.lockKey, run.leaseMs),
    leaks: hygiene ? leakCount(hygiene) : 0,
    hygiene,
    crashes: run.crashed.length,
    acquireErrors: count('acq-fail'),
    releaseErrors: count('release'),
    extra: { ...run.figures },
    violations: [],
    ok: true,
  };
  const history: History = { events, nemesis, expirations: [...run.expirations], lockKey: run.lockKey, leaseMs: run.leaseMs };
  result.violations.push(...commonViolations(result, run.leaseMs), ...(scenario.check?.(history, result) ?? []));
  if (overlapExamples.length > 0) result.extra.unexpectedOverlapExamples = overlapExamples;
  if (tokenExamples.length > 0) result.extra.tokenInversionExamples = tokenExamples;
  if (fencingExamples.length > 0) result.extra.staleWriteExamples = fencingExamples;
  return result;
}

function skipped(scenario: Scenario, reason: string): ScenarioResult {
  return {
    scenario: scenario.name, title: scenario.title, skipped: reason, runs: 0, faultsInjected: 0, sections: 0, leaseMs: 0, durationMs: 0,
    expectedOverlaps: 0, unexpectedOverlaps: 0, maxExpectedOverlapMs: null, maxUnexpectedOverlapMs: null, causes: {}, maxOccupancy: 0,
    tokenInversions: 0, unexpectedTokenInversions: 0, duplicateTokens: 0,
    staleWritesAccepted: 0, staleWritesAcceptedTokenReuse: 0, staleWritesRejected: 0, fencedOut: 0, lostUpdates: 0, fencedLostUpdates: 0, counterSets: 0,
    recoveryP50Ms: null, recoveryP99Ms: null, recoveryMaxMs: null, unrecovered: 0, slowRecoveries: 0,
    handoffP50Ms: null, handoffP99Ms: null, handoffMaxMs: null, maxWaitMs: null,
    losses: 0, lossDetectionMs: null, lossDetectionMaxMs: null, lossesWithoutExpiry: 0, resumeToLossMaxMs: null, pausedNotTold: 0,
    leaks: 0, crashes: 0, acquireErrors: {}, releaseErrors: {}, extra: {}, violations: [], ok: true,
  };
}
