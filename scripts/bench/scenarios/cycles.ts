import { PEERS, type Adapter, type Impl } from '../adapters/types.js';
import { Latencies, now, type Figures } from '../measure.js';
import { acquireUntilGranted, closedLoop, inRounds, redisFigures, type BenchContext, type Column, type Row } from '../scenario.js';

/**
 * Acquire + release cycles with nobody waiting: `tasks` loops, each on its own key, for every library
 * (the floors included), in rotating rounds. Figures: cycles per second (and its ratio to the floor's and
 * to the best peer's, default or tuned: ratios of the medians), cycle latency p50/p99/max, Redis
 * requests, calls and server µs per cycle.
 */
export async function runCycles(ctx: BenchContext, label: string, tasks: number): Promise<Row[]> {
  const rounds = ctx.quick ? 3 : 5;
  const warmMs = ctx.quick ? 300 : 500;
  const measureMs = ctx.quick ? 1500 : 2000;
  const rows = await inRounds(ctx, ctx.adapters, rounds, label, async (adapter: Adapter, round: number): Promise<Figures> => {
    const mutexes = Array.from({ length: tasks }, (_, t) => adapter.mutex(`bench:${ctx.runId}:${label}:${adapter.impl}:${round}:${t}`));
    const latency = new Latencies();
    let cycles = 0;
    const result = await closedLoop(ctx, adapter, warmMs, measureMs, tasks, async (task, window) => {
      const mutex = mutexes[task];
      const started = now();
      if ((await acquireUntilGranted(mutex)) > 0) throw new Error(`${adapter.impl}: a free lock was refused`);
      await mutex.release();
      const ended = now();
      if (window.contains(ended)) {
        cycles++;
        latency.record(ended - started);
      }
    });
    return { cyclesPerSec: cycles / result.seconds, ...latency.figures('latency'), ...redisFigures(ctx, adapter, result, cycles) };
  });
  return withRatios(rows);
}

/** Adds `xFloor`, `xLuaFloor` and `xBestPeer` (cycles/s over the floor's, over relock's own Lua's, over the best peer's, default or tuned) to each row. */
export function withRatios(rows: Row[]): Row[] {
  return withRatiosOf(rows, 'cyclesPerSec', 'higher');
}

/**
 * Adds `xFloor`, `xLuaFloor` and `xBestPeer` for `figure`: its value over the floor's and over `lua-floor`'s
 * (when they have one: relock's share of the cost beyond its own Lua is 1 − ×lua-floor) and over
 * the best peer's, default or tuned; the best is the highest or the lowest value, as `better` says. The
 * floor is `floor`, relock's node-redis floor; `floor-ioredis`, `floor-setnx` and `floor-glide` are further
 * references, with their own ratio to it.
 */
export function withRatiosOf(rows: Row[], figure: string, better: 'higher' | 'lower'): Row[] {
  const value = (impl: Impl): number | undefined => rows.find((r) => r.impl === impl)?.figures[figure];
  const floor = value('floor');
  const luaFloor = value('lua-floor');
  const peers = PEERS.map(value).filter((v): v is number => v !== undefined && Number.isFinite(v));
  const best = peers.length === 0 ? undefined : better === 'higher' ? Math.max(...peers) : Math.min(...peers);
  return rows.map((row) => {
    const own = row.figures[figure];
    if (own === undefined) return row;
    return { ...row, figures: { ...row.figures, ...(floor ? { xFloor: own / floor } : {}), ...(luaFloor ? { xLuaFloor: own / luaFloor } : {}), ...(best ? { xBestPeer: own / best } : {}) } };
  });
}

/** The table of scenarios 1 and 2; latencies with `latencyDecimals` decimals. */
export function cycleColumns(latencyDecimals: number): Column[] {
  return [
    { figure: 'cyclesPerSec', heading: 'cycles/s', decimals: 0 },
    { figure: 'xFloor', heading: '×floor', decimals: 2 },
    { figure: 'xLuaFloor', heading: '×lua-floor', decimals: 2 },
    { figure: 'xBestPeer', heading: '×best peer', decimals: 2 },
    { figure: 'latencyP50Ms', heading: 'p50 ms', decimals: latencyDecimals },
    { figure: 'latencyP99Ms', heading: 'p99 ms', decimals: latencyDecimals },
    { figure: 'redisCommandsPerAcquire', heading: 'requests/cycle', decimals: 2 },
    { figure: 'redisUsecPerAcquire', heading: 'Redis µs/cycle', decimals: 1 },
    { figure: 'clientCpuUsPerAcquire', heading: 'Node CPU µs/cycle', decimals: 0 },
  ];
}
