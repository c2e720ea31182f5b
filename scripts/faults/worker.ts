/**
 * A worker process of the fault suite (forked by the orchestrator with `--import tsx`). It uses relock
 * through its own `LockClient` (`createLockClient({ url })`: relock's own connections, offline queue
 * disabled; or, with `--client`, over a client of another family the worker opens on the URL, see
 * clients.ts), possibly through a proxy, and logs every event to its JSON-lines file (see history.ts).
 *
 * IPC, orchestrator → worker: `{ cmd: 'run', config }`, `{ cmd: 'block', ms }` (block the event loop
 * in the next section, between its last lock check and its write: a GC pause in the worst place),
 * `{ cmd: 'stop' }`, `{ cmd: 'shutdown' }`, `{ cmd: 'exit' }`.
 * Worker → orchestrator: `ready`, `enter`/`exit` (when `notify`), `held`/`released` (many-locks mode),
 * `drained` (every waiter entered its `sectionsPerWaiter` sections), `idle` (after stop: what relock still
 * holds), `done` (after shutdown: timers left).
 *
 * With `FAULTS_TRACE_TIMERS=1` in the environment, a worker that has timers left after `shutdown()`
 * prints where they were created to its stderr (the suite's `workers.stderr.log`).
 */
import { AsyncResource, createHook } from 'node:async_hooks';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLockClient, type LockClient, type LockHandle } from '../../src/index.js';
import { openUserClient, type FaultClient, type UserClient } from './clients.js';
import { LogWriter, now } from './history.js';
import { OracleClient } from './oracle.js';
import { PostgresWriter } from './postgres.js';

/** What one run of a worker does. Times in milliseconds. */
export interface WorkerConfig {
  /** Worker id, unique within the run (`w1`, `w2`, …). */
  w: string;
  mode: 'mutex' | 'semaphore' | 'plain-semaphore' | 'rw' | 'many' | 'leader';
  /** The Redis under test, or the worker's proxy in front of it. */
  url: string;
  /** The client relock is given (see clients.ts): `node-redis` (relock's own for `url`), or the user's own of another family. */
  client: FaultClient;
  oracleUrl: string;
  /** Namespace of the run's oracle keys. */
  run: string;
  logFile: string;
  lockName: string;
  /** `lockWatchdogTimeout`. */
  leaseMs: number;
  responseTimeoutMs?: number;
  /** Mutex and semaphore modes: concurrent loops (waiters) in this process, each with its own owner. */
  waiters: number;
  workMs: [number, number];
  thinkMs: [number, number];
  /** Send `enter`/`exit` messages (the nemesis targets the holder). */
  notify: boolean;
  /** Read the hold count back after each enter. */
  checkHolds: boolean;
  /** Many-locks mode: how many locks, held how long, acquired how many at a time. */
  count?: number;
  holdMs?: number;
  concurrency?: number;
  /** Semaphore mode: the semaphore's number of permits. */
  permits?: number;
  /** Sections each waiter enters before it stops (then `drained` is sent once every loop stopped); none: until stopped. */
  sectionsPerWaiter?: number;
  /**
   * Mutex mode: the section writes to PostgreSQL through relock/fencing instead of the oracle: `workMs /
   * writeEveryMs` writes, `writeEveryMs` apart, to `resource` in `database` (see postgres.ts).
   */
  postgres?: { database: string; resource: string; writeEveryMs: number };
}

/** What a loop holds (a lock or a permit), as the loop sees it. */
interface Held {
  /** The owner the client's `lockLost` event names: the lock's owner, the permit's id. */
  owner: string;
  signal: AbortSignal;
  /** What the `enter` event records: the fencing token, or the permit id and its lease. */
  logged: { tok: string } | { permit: string; leaseMs?: number } | { side: 'r' | 'w' };
  release(): Promise<void>;
}

export type WorkerCommand = { cmd: 'run'; config: WorkerConfig } | { cmd: 'block'; ms: number } | { cmd: 'stop' } | { cmd: 'shutdown' } | { cmd: 'exit' };

export type WorkerMessage =
  | { type: 'ready'; pid: number }
  | { type: 'running'; w: string }
  | { type: 'enter' | 'exit'; w: string; sec: string; t: number; tok?: string }
  | { type: 'held'; w: string; count: number; ms: number }
  | { type: 'released'; w: string }
  | { type: 'drained'; w: string }
  | { type: 'idle'; w: string; watchdogHolds: number; subscriptions: number }
  | { type: 'done'; w: string; timers: number; timersAtShutdown: number }
  | { type: 'error'; w: string; error: string };

const send = (message: WorkerMessage): void => void process.send?.(message);
/** Creation stacks of live timers, when FAULTS_TRACE_TIMERS is set. */
const traced = new Map<number, string>();
if (process.env.FAULTS_TRACE_TIMERS) {
  createHook({
    init(id, type) {
      if (type === 'Timeout') traced.set(id, new Error().stack!.split('\n').slice(4, 14).join('\n'));
    },
    destroy: (id) => void traced.delete(id),
  }).enable();
}
const between = ([a, b]: [number, number]): number => a + Math.random() * (b - a);
/** The share of read-write sections that take the write lock. */
const WRITER_SHARE = 0.4;
/** How long a timer may outlive `shutdown()` before it counts as left behind (node-redis's largest reconnect backoff + jitter). */
const TIMER_GRACE_MS = 2500;
const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

class Run {
  readonly log: LogWriter;
  readonly client: LockClient;
  private readonly stopping = new AbortController();
  private running = true;
  private blockMs = 0;
  /** Owner id → section, for naming the section of a `lockLost` event. */
  private readonly sections = new Map<string, string>();
  private readonly stallTimer: NodeJS.Timeout;
  private loops: Promise<void> = Promise.resolve();
  /** Postgres mode's writer (`config.postgres`). */
  private readonly postgres: PostgresWriter | undefined;

  constructor(readonly config: WorkerConfig, private readonly oracle: OracleClient | undefined, private readonly user: UserClient) {
    this.postgres = config.postgres && new PostgresWriter(config.postgres.database, config.postgres.resource);
    this.log = new LogWriter(config.logFile);
    this.log.write({ ev: 'start', t: now(), w: config.w, pid: process.pid });
    this.client = createLockClient({ ...user.options, lockWatchdogTimeout: config.leaseMs, responseTimeout: config.responseTimeoutMs });
    this.client.on('lockLost', (e) => this.log.write({ ev: 'lost', t: now(), w: config.w, sec: this.sections.get(e.owner), key: e.key, reason: e.reason }));
    let last = now();
    this.stallTimer = setInterval(() => {
      const t = now();
      if (t - last > 60) this.log.write({ ev: 'stall', t, w: config.w, lagMs: Math.round(t - last - 10) });
      last = t;
    }, 10);
  }

  start(): void {
    const { config } = this;
    if (config.mode === 'many') this.loops = this.many();
    else {
      this.loops = Promise.all(Array.from({ length: config.waiters }, (_, i) => this.waiter(i))).then(() => {
        if (config.sectionsPerWaiter !== undefined) send({ type: 'drained', w: config.w });
      });
    }
  }

  block(ms: number): void {
    this.blockMs = ms;
  }

  /** Stops the loops (waiting acquisitions are aborted, sections in progress finish). */
  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort(new Error('stopping'));
    await this.loops;
    const stats = this.client.stats();
    send({ type: 'idle', w: this.config.w, watchdogHolds: stats.watchdogHolds, subscriptions: stats.subscriptions });
  }

  async shutdown(): Promise<void> {
    clearInterval(this.stallTimer);
    await this.client.shutdown();
    await this.user.close();
    await this.oracle?.close();
    await this.postgres?.close();
    this.log.close();
    await new Promise((resolve) => setImmediate(resolve));
    // A node-redis client destroyed while it waits to reconnect keeps its backoff timer (up to 2.2 s):
    // such timers are transient; only those still there after that are left behind.
    const atShutdown = timers();
    const deadline = now() + TIMER_GRACE_MS;
    while (timers() > 0 && now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50).unref());
    if (timers() > 0 && traced.size > 0) console.error(`[${this.config.w}] timers left:\n${[...traced.values()].join('\n---\n')}`);
    send({ type: 'done', w: this.config.w, timers: timers(), timersAtShutdown: atShutdown });
  }

  /** One waiter: acquire → enter → `work` (resolves with how the section ended) → exit → release, until stopped. */
  private async loop<H extends Held>(index: number, take: (signal: AbortSignal) => Promise<H>, work: (sec: string, held: H) => Promise<'done' | 'lost'>): Promise<void> {
    const { config, log } = this;
    const w = config.w;
    let entered = 0;
    for (let n = 0; this.running && entered < (config.sectionsPerWaiter ?? Infinity); n++) {
      const sec = `${w}.${index}.${n}`;
      const started = now();
      log.write({ ev: 'acquire', t: started, w, sec });
      let held: H;
      try {
        held = await take(this.stopping.signal);
      } catch (error) {
        if (!this.running) break;
        log.write({ ev: 'acq-fail', t: now(), w, sec, err: (error as Error).name, msg: (error as Error).message });
        await sleep(between(config.thinkMs));
        continue;
      }
      const enteredAt = now();
      entered++;
      log.write({ ev: 'enter', t: enteredAt, w, sec, ...held.logged, waitMs: Math.round(enteredAt - started) });
      this.sections.set(held.owner, sec);
      if (config.notify) send({ type: 'enter', w, sec, t: enteredAt, ...('tok' in held.logged ? { tok: held.logged.tok } : {}) });
      let reason: 'done' | 'lost' | 'error' = 'done';
      let message: string | undefined;
      try {
        reason = await work(sec, held);
      } catch (error) {
        reason = 'error';
        message = (error as Error).message;
      }
      log.write({ ev: 'exit', t: now(), w, sec, reason, msg: message });
      if (config.notify) send({ type: 'exit', w, sec, t: now() });
      try {
        await held.release();
        log.write({ ev: 'release', t: now(), w, sec, ok: true });
      } catch (error) {
        log.write({ ev: 'release', t: now(), w, sec, ok: false, err: (error as Error).name, msg: (error as Error).message });
      }
      this.sections.delete(held.owner);
      if (this.running) await sleep(between(config.thinkMs));
    }
  }

  /** One waiter loop of the run's mode. */
  private waiter(index: number): Promise<void> {
    switch (this.config.mode) {
      case 'semaphore':
        return this.semaphore(index);
      case 'plain-semaphore':
        return this.plainSemaphore(index);
      case 'rw':
        return this.readWrite(index);
      case 'leader':
        return this.leader(index);
      default:
        return this.mutex(index);
    }
  }

  /**
   * Read-write mode: each section takes the write lock (a share `WRITER_SHARE` of them) or the read lock.
   * A writer reads the oracle's plain counter, works, (blocks), and writes it back plus one: two writers
   * at once lose an update. A reader only works.
   */
  private readWrite(index: number): Promise<void> {
    const rw = this.client.getReadWriteLock(this.config.lockName);
    return this.loop(index, async (signal) => {
      const side = Math.random() < WRITER_SHARE ? 'w' : 'r';
      const handle = await (side === 'w' ? rw.writeLock() : rw.readLock()).acquire({ signal });
      return { owner: handle.owner, signal: handle.signal, logged: { side }, release: () => handle.release(), side };
    }, async (sec, held) => {
      if (held.side === 'r') return (await this.work(held.signal)) ? 'lost' : 'done';
      const value = await this.oracle!.read();
      if (await this.work(held.signal)) return 'lost';
      if (this.blockMs > 0) this.blockNow(sec);
      await this.oracle!.set(sec, value + 1);
      return 'done';
    });
  }

  /**
   * Plain-semaphore mode: one permit of an `RSemaphore` (its number of permits set by the first worker).
   * Permits belong to nobody and have no lease: a section ends only when its work is done.
   */
  private async plainSemaphore(index: number): Promise<void> {
    const semaphore = this.client.getSemaphore(this.config.lockName);
    await semaphore.trySetPermits(this.config.permits!);
    const never = new AbortController().signal;
    await this.loop(index, async (signal) => {
      await semaphore.acquire({ signal });
      return { owner: `${this.config.w}.${index}`, signal: never, logged: { permit: 'plain' }, release: () => semaphore.release() };
    }, async (_sec, held) => ((await this.work(held.signal)) ? 'lost' : 'done'));
  }

  /** Mutex mode: the fenced lock; in the section, (hold count) → fenced enter → work → (block) → commit. */
  private mutex(index: number): Promise<void> {
    // Each acquisition in a lock context of its own, so that its hold count can be read as its owner sees it
    // (outside a context `getHoldCount()` counts the task's contextless acquisitions, and `acquire()` makes none).
    return this.loop(index, (signal) => this.client.runInContext(async () => {
      const lock = this.client.getFencedLock(this.config.lockName);
      const handle = await lock.acquire({ signal });
      const token = handle.token!.toString();
      const holds = AsyncResource.bind(() => lock.getHoldCount());
      return { owner: handle.owner, signal: handle.signal, logged: { tok: token }, release: () => handle.release(), holds, token };
    }), (sec, held) => (this.postgres ? this.fencedSql(sec, held, this.postgres) : this.fenced(sec, held)));
  }

  /**
   * Postgres mode's section: `workMs / writeEveryMs` writes through relock/fencing, `writeEveryMs` apart
   * (a job of that many steps, however long it is paused between them), each after checking the handle's signal (as a careful user does; a paused holder's check passes when
   * it runs again, before its watchdog could tell it). Each attempt is logged (`write`); a refused one
   * (StaleTokenError: a newer holder wrote) ends the section.
   */
  private async fencedSql(sec: string, held: Held & { token: string }, writer: PostgresWriter): Promise<'done' | 'lost'> {
    const { config, log } = this;
    const writes = Math.ceil(between(config.workMs) / config.postgres!.writeEveryMs);
    for (let i = 0; i < writes; i++) {
      if (held.signal.aborted) return 'lost';
      const t0 = now();
      const outcome = await writer.write(config.w, sec, held.token, t0);
      log.write({ ev: 'write', t: now(), w: config.w, sec, tok: held.token, t0, ...outcome });
      if (!outcome.ok) return 'done';
      await sleep(config.postgres!.writeEveryMs, undefined, { signal: held.signal }).catch(() => {});
    }
    return 'done';
  }

  /**
   * Leader mode: the loop campaigns (`RLeaderElection.campaign`, identity = the worker id), leads for
   * `workMs` unless the leadership's signal aborts first (the section is the leadership: entered when
   * elected, exited when its signal aborts or the work is done, then resigned), and writes the fenced
   * resource with its term. Each transition of the signal is logged (`signal`). The first loop also runs
   * `observe()` until the run stops, logging each change it sees (`observed`).
   */
  private leader(index: number): Promise<void> {
    const { config, log } = this;
    const election = this.client.getLeaderElection(config.lockName, { identity: config.w });
    const observing = index === 0 ? this.observeLeaders(election) : Promise.resolve();
    const leading = this.loop(index, async (signal) => {
      const leadership = await election.campaign({ signal });
      const token = leadership.term.toString();
      leadership.signal.addEventListener('abort', () => log.write({ ev: 'signal', t: now(), w: config.w, tok: token, reason: (leadership.signal.reason as { reason?: string }).reason }), { once: true });
      return { owner: `leader:${token}`, signal: leadership.signal, logged: { tok: token }, release: () => leadership.resign(), token };
    }, (sec, held) => this.fenced(sec, held));
    return Promise.all([leading, observing]).then(() => undefined);
  }

  /** Logs every leader change `observe()` yields until the run stops. */
  private async observeLeaders(election: ReturnType<LockClient['getLeaderElection']>): Promise<void> {
    const w = this.config.w;
    this.log.write({ ev: 'observing', t: now(), w });
    try {
      for await (const change of election.observe({ signal: this.stopping.signal })) {
        this.log.write({ ev: 'observed', t: now(), w, tok: change.term.toString(), leader: change.identity });
      }
    } catch (error) {
      this.log.write({ ev: 'observe-fail', t: now(), w, msg: (error as Error).message });
    }
  }

  private async fenced(sec: string, held: Held & { holds?: () => Promise<number>; token: string }): Promise<'done' | 'lost'> {
    const { config, log, oracle } = this;
    const w = config.w;
    if (config.checkHolds && held.holds) log.write({ ev: 'holds', t: now(), w, sec, holds: await held.holds() });
    const state = await oracle!.enter(sec, held.token);
    log.write({ ev: 'begin', t: now(), w, sec, ok: state.ok });
    if (await this.work(held.signal)) return 'lost';
    if (this.blockMs > 0) this.blockNow(sec);
    const t0 = now();
    const ok = await oracle!.commit(sec, held.token, state);
    log.write({ ev: 'commit', t: now(), w, sec, ok, t0 });
    return 'done';
  }

  /**
   * Semaphore mode: one permit of the semaphore (its number of permits set by the first worker), with a
   * lease of `leaseMs` every other section and renewed by the watchdog otherwise; in the section, work.
   */
  private async semaphore(index: number): Promise<void> {
    const semaphore = this.client.getPermitExpirableSemaphore(this.config.lockName);
    await semaphore.trySetPermits(this.config.permits!);
    let leased = index % 2 === 1;
    await this.loop(index, async (signal) => {
      leased = !leased;
      const handle = await semaphore.acquire({ signal, leaseMs: leased ? this.config.leaseMs : undefined });
      return { owner: handle.id, signal: handle.signal, logged: { permit: handle.id, leaseMs: handle.leaseTime }, release: () => handle.release() };
    }, async (_sec, held) => ((await this.work(held.signal)) ? 'lost' : 'done'));
  }

  /** Works for `workMs` unless `signal` aborts first; resolves with whether it did (the hold was lost). */
  private async work(signal: AbortSignal): Promise<boolean> {
    await sleep(between(this.config.workMs), undefined, { signal }).catch(() => {});
    return signal.aborted;
  }

  /** The event loop blocked as by a long GC pause. */
  private blockNow(sec: string): void {
    const t0 = now();
    const until = t0 + this.blockMs;
    this.blockMs = 0;
    while (now() < until);
    this.log.write({ ev: 'block', t: now(), w: this.config.w, sec, t0 });
  }

  /** Many-locks mode: acquire `count` locks, hold them `holdMs` while the watchdog renews them, release. */
  private async many(): Promise<void> {
    const { config, log } = this;
    const count = config.count!;
    const handles: LockHandle[] = [];
    const started = now();
    await pool(count, config.concurrency!, async (i) => {
      handles.push(await this.client.getLock(`${config.lockName}:${i}`).acquire({ waitMs: 10_000 }));
    });
    const acquiredMs = now() - started;
    send({ type: 'held', w: config.w, count: handles.length, ms: Math.round(acquiredMs) });
    const calls = this.client.stats().renewalCalls;
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const rssBefore = process.memoryUsage().rss;
    await sleep(config.holdMs, undefined, { signal: this.stopping.signal }).catch(() => {});
    delay.disable();
    const lost = handles.filter((h) => h.signal.aborted).length;
    const renewalCalls = this.client.stats().renewalCalls - calls;
    const releaseStarted = now();
    let releaseErrors = 0;
    await pool(handles.length, config.concurrency!, async (i) => {
      await handles[i].release().catch(() => releaseErrors++);
    });
    log.write({
      ev: 'stats', t: now(), w: config.w, locks: handles.length, acquireMs: Math.round(acquiredMs), holdMs: config.holdMs, lost, renewalCalls,
      releaseMs: Math.round(now() - releaseStarted), releaseErrors, eventLoopP50Ms: Math.round(delay.percentile(50) / 1e5) / 10,
      eventLoopP99Ms: Math.round(delay.percentile(99) / 1e5) / 10, eventLoopMaxMs: Math.round(delay.max / 1e5) / 10, rssMb: Math.round(Math.max(rssBefore, process.memoryUsage().rss) / 2 ** 20),
    });
    send({ type: 'released', w: config.w });
  }
}

/** Runs `task(0..n-1)` with at most `concurrency` at a time. */
async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, async () => {
    while (next < n) await task(next++);
  }));
}

let current: Run | undefined;
const fail = (error: unknown): void => send({ type: 'error', w: current?.config.w ?? '?', error: String((error as Error)?.stack ?? error) });

process.on('message', (message: WorkerCommand) => {
  switch (message.cmd) {
    case 'run':
      Promise.all([OracleClient.open(message.config.oracleUrl, message.config.run), openUserClient(message.config.client, message.config.url)]).then(([oracle, user]) => {
        current = new Run(message.config, oracle, user);
        current.start();
        send({ type: 'running', w: message.config.w });
      }, fail);
      break;
    case 'block':
      current?.block(message.ms);
      break;
    case 'stop':
      current?.stop().catch(fail);
      break;
    case 'shutdown':
      current?.shutdown().then(() => (current = undefined), fail);
      break;
    case 'exit':
      process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', pid: process.pid });
