/**
 * What a scenario is and how in-process scenarios are run fairly: every library in the same process
 * against the same Redis, in rounds whose order rotates, each round with its own warm-up; a figure is
 * the median of its rounds.
 */
import { REQUEST_COMMANDS, type Adapter, type Impl } from './adapters/types.js';
import type { Probe } from './env.js';
import { commandDelta, describeDelta, loop, medianOfRounds, now, sleep, type CommandDelta, type CommandStats, type Figures } from './measure.js';

export interface BenchContext {
  readonly probe: Probe;
  readonly quick: boolean;
  /** Part of every key name, so runs never share keys (and cleanup finds them). */
  readonly runId: string;
  /** The libraries to measure, in their base order. */
  readonly impls: readonly Impl[];
  /** In-process adapters (scenarios 1, 2, 3 and 6). */
  readonly adapters: readonly Adapter[];
  /** Print each window's INFO commandstats delta per acquisition (`--commands`). */
  readonly commands: boolean;
  /** The source tree `relock-base` is loaded from (`--baseline DIR`), for scenarios run in child processes. */
  readonly baseline?: string;
  /** A progress line (stderr). */
  progress(message: string): void;
}

/**
 * The reason printed for what `--quick` leaves out: sesamecare-redlock (redlock's algorithm on the same
 * client) outside scenarios 1–3, and the peers' 100,000-lock runs with the short lease.
 */
export const FULL_RUN_ONLY = 'full run only (npm run bench without --quick)';

/** One library's line in a scenario: its figures, or why it has none. */
export interface Row {
  impl: Impl;
  figures: Figures;
  skipped?: string;
}

/** A column of a scenario's table: the figure's name, its heading, and how many decimals to print. */
export interface Column {
  figure: string;
  heading: string;
  decimals?: number;
}

export interface Scenario {
  readonly id: number;
  /** The `scenario` field of the JSON lines. */
  readonly key: string;
  readonly title: string;
  /** What it does, in one or two sentences (printed above its table). */
  readonly description: string;
  readonly columns: readonly Column[];
  run(ctx: BenchContext): Promise<Row[]>;
}

/**
 * Runs `round` for each of `items` (adapters, or libraries run in child processes) `rounds` times,
 * rotating the order every round (round r starts with the r-th), and gives each library the per-figure
 * median of its rounds plus `rounds`.
 */
export async function inRounds<T extends { readonly impl: Impl }>(ctx: BenchContext, items: readonly T[], rounds: number, label: string, round: (item: T, round: number) => Promise<Figures>): Promise<Row[]> {
  const results = new Map<Impl, Figures[]>(items.map((a) => [a.impl, []]));
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < items.length; i++) {
      const item = items[(i + r) % items.length];
      ctx.progress(`${label}: ${item.impl}, round ${r + 1}/${rounds}`);
      results.get(item.impl)!.push(await round(item, r));
    }
  }
  return items.map((a) => ({ impl: a.impl, figures: { ...medianOfRounds(results.get(a.impl)!), rounds } }));
}

/** The measured part of a closed-loop run, after its warm-up. */
export interface Window {
  readonly start: number;
  readonly end: number;
  /** Whether monotonic time `t` falls in the measured part. */
  contains(t: number): boolean;
}

/** How long a window lasted, what Redis did in it, and the process's CPU time. */
export interface WindowResult {
  seconds: number;
  redis: CommandDelta;
  /** User + system CPU of this process during the window, in µs (the harness's share is small). */
  cpuUsec: number;
}

/**
 * Runs `tasks` loops of `body` for `warmMs + measureMs`, and takes INFO commandstats at the start and
 * the end of the measured window (from the probe connection, while the loops run). `body` records only
 * what falls in the window. Loops finish their last iteration after it.
 */
export async function closedLoop(ctx: BenchContext, adapter: Adapter, warmMs: number, measureMs: number, tasks: number, body: (task: number, window: Window) => Promise<void>): Promise<WindowResult> {
  const start = now() + warmMs;
  const end = start + measureMs;
  const window: Window = { start, end, contains: (t) => t >= start && t < end };
  let before: CommandStats | undefined;
  let after: CommandStats | undefined;
  let cpu: NodeJS.CpuUsage | undefined;
  const snapshots = (async () => {
    await sleep(start - now());
    before = await ctx.probe.commandStats();
    const cpuBefore = process.cpuUsage();
    await sleep(end - now());
    cpu = process.cpuUsage(cpuBefore);
    after = await ctx.probe.commandStats();
  })();
  await Promise.all([loop(tasks, end, (task) => body(task, window)), snapshots]);
  return { seconds: measureMs / 1000, redis: commandDelta(before!, after!, REQUEST_COMMANDS[adapter.impl]), cpuUsec: cpu!.user + cpu!.system };
}

/** Acquires through `mutex`, calling it again each time the library gives up; resolves to how many times it gave up. */
export async function acquireUntilGranted(mutex: { acquire(): Promise<boolean> }): Promise<number> {
  let gaveUp = 0;
  while (!(await mutex.acquire())) gaveUp++;
  return gaveUp;
}

/**
 * The Redis and CPU figures of a window with `acquisitions`: `redisCommandsPerAcquire` (requests sent),
 * `redisCallsPerAcquire` (scripts' inner calls too), `redisUsecPerAcquire` (server time) and
 * `clientCpuUsPerAcquire` (this process). With `--commands`, prints the per-command breakdown.
 */
export function redisFigures(ctx: BenchContext, adapter: Adapter, result: WindowResult, acquisitions: number): Figures {
  if (acquisitions === 0) return {};
  if (ctx.commands) ctx.progress(`  ${adapter.impl}: ${describeDelta(result.redis, acquisitions)}`);
  return {
    redisCommandsPerAcquire: result.redis.requests / acquisitions,
    redisCallsPerAcquire: result.redis.calls / acquisitions,
    redisUsecPerAcquire: result.redis.requestUsec / acquisitions,
    clientCpuUsPerAcquire: result.cpuUsec / acquisitions,
  };
}
