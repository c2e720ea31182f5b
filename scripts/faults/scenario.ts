/** What a scenario is made of, and what it gets to work with while it runs. */
import type { createClient } from 'redis';
import type { RedisServer } from '../../test/support/redis.js';
import type { Cause } from './checkers/causes.js';
import type { FaultClient } from './clients.js';
import type { Expiration, NemesisEvent, WorkerEvent } from './history.js';
import type { OracleOp } from './oracle.js';
import type { FaultDatabase } from './postgres.js';
import type { WorkerProcess } from './processes.js';
import type { Proxy } from './proxy.js';
import type { ScenarioResult } from './result.js';

export type Redis = ReturnType<typeof createClient>;

/** How a scenario's system is set up. Times in milliseconds. */
export interface Setup {
  /** Worker processes. */
  workers: number;
  /** Waiters (loops, each its own owner) per process. Default 1. */
  waiters?: number;
  /** `lockWatchdogTimeout` of every worker. */
  leaseMs: number;
  /** Time spent in the critical section (uniform in the range). Default [60, 150]. */
  workMs?: [number, number];
  /** Time between a release and the next acquire. Default [5, 30]. */
  thinkMs?: [number, number];
  /** Each worker talks to Redis through its own proxy. */
  proxy?: boolean;
  checkHolds?: boolean;
  /** Extra redis-server arguments. */
  redisArgs?: string[];
  responseTimeoutMs?: number;
  /**
   * `mutex` (default): the workers take a fenced lock. `semaphore`: they take one permit of a permit-expirable
   * semaphore of `permits` permits; `plain-semaphore`: of an `RSemaphore`. `rw`: the read or the write lock
   * of a read-write lock. `leader`: they campaign in a leader election (a section is a leadership, its
   * token the term) and observe its changes. `many`: one worker holds `count` locks for `holdMs`, taking `concurrency` at a time.
   */
  mode?: 'mutex' | 'semaphore' | 'plain-semaphore' | 'rw' | 'many' | 'leader';
  /** Semaphore mode: the number of permits (how many sections may be open at once). */
  permits?: number;
  count?: number;
  holdMs?: number;
  concurrency?: number;
  /** Sections each waiter enters before it stops (the worker then sends `drained`); none: until the run stops. */
  sectionsPerWaiter?: number;
  /**
   * Mutex mode: sections write to a PostgreSQL database of the run's own through relock/fencing (one write
   * every `writeEveryMs`), instead of the oracle; the fencing checker then judges the database's history.
   */
  postgres?: { writeEveryMs: number };
}

export interface Entry {
  w: string;
  sec: string;
  t: number;
  /** The section's fencing token (fenced lock and leader modes). */
  tok?: string;
}

export interface RunContext {
  readonly quick: boolean;
  readonly leaseMs: number;
  /** The lock's key (a hash) and name. */
  readonly lockKey: string;
  readonly redis: RedisServer;
  /** A direct connection to the Redis under test (never through a proxy). */
  readonly admin: Redis;
  /** The connection receiving key expirations (not to be killed). */
  readonly watcherId: number;
  /** Records a fault in the history. */
  record(event: NemesisEvent): void;
  /** The most recent section entered and not exited (from the workers' notifications). */
  holder(): Entry | undefined;
  /** Every section entered and not exited by a worker still alive (from the workers' notifications). */
  openSections(): Entry[];
  /** The next entry matching `filter`; rejects after `timeoutMs`. */
  nextEnter(timeoutMs: number, filter?: (e: Entry) => boolean): Promise<Entry>;
  /** The next exit of section `sec`; rejects after `timeoutMs`. */
  nextExit(sec: string, timeoutMs: number): Promise<number>;
  worker(w: string): WorkerProcess;
  proxy(w: string): Proxy;
  /** Ids of the workers alive and not killed. */
  workerIds(): string[];
  /** Starts one more worker (a replacement for a killed one); resolves with its id. */
  spawn(): Promise<string>;
  /** Messages of a worker: `held`/`released` (many mode), `drained` (every waiter did its sections). */
  message<T extends string>(w: string, type: T, timeoutMs: number): Promise<Record<string, unknown>>;
  /** Expirations seen so far. */
  readonly expirations: readonly Expiration[];
  /** Scenario-specific figures for the report (merged into `result.extra`). */
  readonly figures: Record<string, unknown>;
  /** The run's database and the resource the workers write (`Setup.postgres`). */
  readonly postgres?: { db: FaultDatabase; resource: string };
}

/** Everything the checkers and a scenario's own checks get. */
export interface History {
  events: WorkerEvent[];
  nemesis: NemesisEvent[];
  expirations: Expiration[];
  lockKey: string;
  leaseMs: number;
  /** `Setup.postgres`: the writes the database accepted, in the order it applied them. */
  writes?: readonly OracleOp[];
}

/** What every scenario has. */
interface Described {
  /** Short id, used in `--only` and as the JSON `scenario`. */
  name: string;
  /** One line for the report: the fault. */
  title: string;
  /** Why overlaps are (or are not) expected here, for the report. */
  expect: string;
  /**
   * The causes whose windows may excuse an overlap here (checkers/causes.ts), declared from the
   * scenario's own fault; none: every overlap fails the scenario (a machine stall is always excused,
   * within its window).
   */
  excuses?: Cause[];
  /** A reason to skip (a feature this build, or `client`, lacks; a server it needs is unreachable), or undefined to run. */
  skip?(client: FaultClient): string | undefined | Promise<string | undefined>;
}

/**
 * A scenario that runs in the suite's own process and manages its servers itself (one that does not fit
 * one Redis with forked workers). It fills `result` (every figure starts at 0 or null) and adds its
 * violations; the invariants of every scenario are checked afterwards. It must stop everything it
 * started, also when it throws (a throw is a harness violation; the figures filled so far stay).
 */
export interface InProcessScenario extends Described {
  runInProcess(quick: boolean, result: ScenarioResult, progress: (message: string) => void, client: FaultClient): Promise<void>;
}

/** A scenario run against one Redis with forked workers (see orchestrator.ts). */
export interface Scenario extends Described {
  setup(quick: boolean): Setup;
  /** Injects the faults; resolves with the number of fault iterations (runs). */
  nemesis(ctx: RunContext): Promise<number>;
  /** Scenario-specific invariants and figures: returns violations, may add to `result.extra`. */
  check?(history: History, result: ScenarioResult): string[];
}

export type AnyScenario = Scenario | InProcessScenario;
