/**
 * The state of one running scenario (`RunContext`, what its nemesis works with): its workers and their
 * proxies, the holder as the workers report it, the faults recorded, the expirations seen; and the clean
 * stop at its end, which collects the hygiene facts.
 */
import { join } from 'node:path';
import { createClient } from 'redis';
import type { RedisServer } from '../../test/support/redis.js';
import type { FaultClient } from './clients.js';
import { keyFacts, relockSubscribers, type HygieneFacts } from './checkers/hygiene.js';
import type { Expiration, NemesisEvent } from './history.js';
import type { FaultDatabase } from './postgres.js';
import type { WorkerPool, WorkerProcess } from './processes.js';
import { Proxy } from './proxy.js';
import type { Entry, Redis, RunContext, Setup } from './scenario.js';
import type { WorkerConfig, WorkerMessage } from './worker.js';

/** What every scenario of one suite run shares. */
export interface Suite {
  quick: boolean;
  /** The client the workers give relock (`--client`; see clients.ts). */
  client: FaultClient;
  /** Per-run directories go below it (kept when a scenario fails). */
  baseDir: string;
  oracleUrl: string;
  oracle: Redis;
  pool: WorkerPool;
  progress(message: string): void;
}

export const connect = async (url: string): Promise<Redis> => {
  const client = createClient({ url });
  client.on('error', () => {});
  await client.connect();
  return client as Redis;
};

/** How long the subscriptions of idle workers may take to go (see `finish()`). */
const SUBSCRIBER_DRAIN_MS = 5000;

/** Waits for `check` to be true, polling every 50 ms, for up to `ms`. */
async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check()) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** The state of one running scenario, as its nemesis sees it (`RunContext`). */
export class Run implements RunContext {
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
    readonly postgres?: { db: FaultDatabase; resource: string },
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

  openSections(): Entry[] {
    const alive = new Set(this.workerIds());
    return [...this.open.values()].filter((e) => alive.has(e.w));
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
    return this.start(process);
  }

  async message(w: string, type: string, timeoutMs: number): Promise<Record<string, unknown>> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const i = this.messages.findIndex((m) => m.w === w && m.message.type === type);
      if (i >= 0) return this.messages.splice(i, 1)[0].message;
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
      w, mode: setup.mode ?? 'mutex', url: proxy?.url ?? this.redis.url, client: this.suite.client, oracleUrl: this.suite.oracleUrl, run: this.id,
      logFile: join(this.dir, `${w}.jsonl`), lockName: this.lockKey, leaseMs: setup.leaseMs, responseTimeoutMs: setup.responseTimeoutMs,
      waiters: setup.waiters ?? 1, workMs: setup.workMs ?? [60, 150], thinkMs: setup.thinkMs ?? [5, 30],
      notify: (setup.waiters ?? 1) === 1, checkHolds: setup.checkHolds ?? false,
      count: setup.count, holdMs: setup.holdMs, concurrency: setup.concurrency, permits: setup.permits, sectionsPerWaiter: setup.sectionsPerWaiter,
      ...(setup.postgres && this.postgres ? { postgres: { database: this.postgres.db.name, resource: this.postgres.resource, writeEveryMs: setup.postgres.writeEveryMs } } : {}),
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
      const entry = { w, sec: message.sec, t: message.t, ...(message.tok === undefined ? {} : { tok: message.tok }) };
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
    } else if (message.type === 'held' || message.type === 'released' || message.type === 'drained') {
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
      e.proxy?.restoreSubscribers();
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
    // Subscriptions must go once no one waits. A subscriber connection still reconnecting (node-redis
    // backs off up to 2.2 s) sends its queued UNSUBSCRIBE only when it is back: allow for that.
    let subscribers = 0;
    const draining = performance.now();
    await until(async () => (subscribers = await relockSubscribers(this.admin)) === 0, SUBSCRIBER_DRAIN_MS);
    const subscriberDrainMs = Math.round(performance.now() - draining);
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
    // A plain semaphore's count has no TTL (configuration): every permit must be back; then it goes.
    if (this.setup.mode === 'plain-semaphore') {
      this.figures.permitsAtEnd = Number(await this.admin.get(this.lockKey));
      await this.admin.del(this.lockKey);
    }
    // After shutdown (which deletes pending unlock latches): what is left must expire within a lease.
    const keys = await keyFacts(this.admin, `${this.lockKey}*`, this.leaseMs + 2000);
    for (const w of stuck) await this.worker(w).kill();
    return { ...keys, subscribers, subscriberDrainMs, relockHolds, relockSubscriptions, timersLeft, transientTimers, stuckWorkers: stuck };
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

