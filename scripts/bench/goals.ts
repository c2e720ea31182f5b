/**
 * The goals of issues 8, 12 and 31, checked against a run's results and printed next to them (never
 * asserted by tests: the figures depend on the machine).
 */
import { PEERS, type Impl } from './adapters/types.js';
import type { Figures } from './measure.js';
import type { Row } from './scenario.js';

export interface GoalResult {
  goal: string;
  /** undefined when the run lacks the figures (a scenario or library was left out). */
  pass: boolean | undefined;
  detail: string;
}

/** Results by scenario key. */
export type Results = ReadonlyMap<string, readonly Row[]>;


/** Scenario 5's run the goals speak of: 100,000 locks, relock's default lease. */
const DEFAULT_WATCHDOG: Figures = { heldLocks: 100_000, leaseSec: 30 };

const fmt = (n: number, decimals = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: decimals, minimumFractionDigits: decimals });

/** A figure of `impl` in `scenario`; `where` picks among several rows (scenario 5's runs). */
function figure(results: Results, scenario: string, impl: Impl, name: string, where: Figures = {}): number | undefined {
  const row = results.get(scenario)?.find((r) => r.impl === impl && !r.skipped && Object.entries(where).every(([k, v]) => r.figures[k] === v));
  const value = row?.figures[name];
  return value === undefined || Number.isNaN(value) ? undefined : value;
}

function peerFigures(results: Results, scenario: string, name: string): Array<[Impl, number]> {
  return PEERS.flatMap((impl) => {
    const value = figure(results, scenario, impl, name);
    return value === undefined ? [] : [[impl, value] as [Impl, number]];
  });
}

const missing = (goal: string, what: string): GoalResult => ({ goal, pass: undefined, detail: `not measured in this run (${what})` });

/** A `×` ratio with two decimals. */
const times = (n: number): string => `${fmt(n, 2)}×`;

/**
 * The cycle goals of issue 31 for `scenario`: at least `luaShare` × relock's own Lua run bare (`lua-floor`:
 * the client's cost against the design's floor); `×floor` (two bare EVALSHAs of a `SET NX` lock) and
 * `×redis-semaphore` are printed for the record, not goals (they compare with designs relock did not choose).
 */
function cycleGoals(results: Results, scenario: string, label: string, luaShare: number): GoalResult[] {
  const relock = figure(results, scenario, 'relock', 'cyclesPerSec');
  const luaFloor = figure(results, scenario, 'lua-floor', 'cyclesPerSec');
  const goal = `${label}: at least ${luaShare}× lua-floor (relock's own Lua, no client logic)`;
  const record = (impl: Impl, name: string): GoalResult => {
    const other = figure(results, scenario, impl, 'cyclesPerSec');
    const text = `${label}: against ${name} (for the record)`;
    return relock === undefined || other === undefined ? missing(text, `${scenario} with relock and ${impl}`) : { goal: text, pass: undefined, detail: `relock ${fmt(relock)}/s = ${times(relock / other)} ${impl} ${fmt(other)}/s` };
  };
  return [
    relock === undefined || luaFloor === undefined
      ? missing(goal, `${scenario} with relock and lua-floor`)
      : { goal, pass: relock >= luaShare * luaFloor, detail: `relock ${fmt(relock)}/s = ${times(relock / luaFloor)} lua-floor ${fmt(luaFloor)}/s` },
    record('hash-floor', "Redisson's RLock Lua run bare"),
    record('floor', 'the floor (2 bare EVALSHAs)'),
    record('redis-semaphore', 'redis-semaphore'),
  ];
}

/** The waiting-path and memory goals of issue 12 (scenarios 7 and 8). */
function costGoals(results: Results): GoalResult[] {
  const goals: GoalResult[] = [];
  {
    const goal = '1,000 contended locks: at most 50 µs of CPU per acquisition, GC at most 5 % of the time';
    const cpu = figure(results, 'many-locks', 'relock', 'clientCpuUsPerAcquire');
    const gc = figure(results, 'many-locks', 'relock', 'gcShare');
    goals.push(cpu === undefined || gc === undefined ? missing(goal, 'scenario 7 with relock') : { goal, pass: cpu <= 50 && gc <= 5, detail: `relock ${fmt(cpu)} µs per acquisition, ${fmt(gc)}% of the time GC` });
  }
  {
    const goal = 'At most 1 KB of heap per held watchdog lock; at most 12 KB allocated per uncontended cycle';
    const held = figure(results, 'memory', 'relock', 'heapBytesPerHold');
    const handle = figure(results, 'memory', 'relock', 'heapBytesPerHandleHold');
    const allocated = figure(results, 'memory', 'relock', 'allocatedBytesPerCycle');
    goals.push(held === undefined || allocated === undefined
      ? missing(goal, 'scenario 8 with relock')
      : {
          goal,
          pass: held <= 1024 && allocated <= 12 * 1024,
          detail: `relock ${fmt(held)} B per held lock (${fmt(handle ?? NaN)} B with a handle), ${fmt(allocated / 1024, 1)} KB allocated per cycle`,
        });
  }
  return goals;
}

export function evaluateGoals(results: Results): GoalResult[] {
  const goals: GoalResult[] = [...cycleGoals(results, 'uncontended', 'Uncontended, 1 task', 0.95), ...cycleGoals(results, 'distinct-keys', '64 tasks on distinct keys', 0.9)];
  {
    const goal = 'An unlock sends one request and writes no key besides the lock (uncontended: 2 requests per cycle)';
    const requests = figure(results, 'uncontended', 'relock', 'redisCommandsPerAcquire');
    goals.push(requests === undefined ? missing(goal, 'scenario 1 with relock') : { goal, pass: requests <= 2.005, detail: `relock ${fmt(requests, 2)} requests per cycle` });
  }
  {
    // Issue 11: relock on GLIDE, against the same floor (bare EVALSHA round trips on node-redis).
    const goal = 'Uncontended cycle on Valkey GLIDE, against the node-redis floor (for the record)';
    const glide = figure(results, 'uncontended', 'relock-glide', 'cyclesPerSec');
    const floor = figure(results, 'uncontended', 'floor', 'cyclesPerSec');
    const glideFloor = figure(results, 'uncontended', 'floor-glide', 'cyclesPerSec');
    const onGlide = glideFloor === undefined ? '' : `; ${fmt(glide! / glideFloor, 2)}× floor-glide ${fmt(glideFloor)}/s`;
    goals.push(glide === undefined || floor === undefined
      ? missing(goal, 'scenario 1 with relock-glide and floor')
      : { goal, pass: undefined, detail: `relock-glide ${fmt(glide)}/s = ${fmt(glide / floor, 2)}× floor ${fmt(floor)}/s${onGlide}` });
  }
  {
    // Issue 11: relock on ioredis next to the peers on the same ioredis client, with the ratios.
    const goal = 'relock on ioredis ahead of every peer on the same ioredis client (uncontended, contention)';
    const ratios = (scenario: string, name: string): string | undefined => {
      const relock = figure(results, scenario, 'relock-ioredis', name);
      const peers = peerFigures(results, scenario, name);
      if (relock === undefined || peers.length === 0) return undefined;
      const ofNodeRedis = figure(results, scenario, 'relock', name);
      return `${scenario}: relock-ioredis ${fmt(relock)}/s = ${peers.map(([i, v]) => `${fmt(relock / v, 2)}× ${i}`).join(', ')}${ofNodeRedis === undefined ? '' : `; ${fmt(relock / ofNodeRedis, 2)}× relock on node-redis`}`;
    };
    const details = [ratios('uncontended', 'cyclesPerSec'), ratios('contention', 'csPerSec')].filter((d): d is string => d !== undefined);
    const ahead = (scenario: string, name: string): boolean => {
      const relock = figure(results, scenario, 'relock-ioredis', name);
      return relock === undefined || peerFigures(results, scenario, name).every(([, v]) => relock > v);
    };
    goals.push(details.length === 0
      ? missing(goal, 'scenario 1 or 3 with relock-ioredis and a peer')
      : { goal, pass: ahead('uncontended', 'cyclesPerSec') && ahead('contention', 'csPerSec'), detail: details.join(' | ') });
  }
  {
    const goal = 'Contention: wait p99 at least 10× lower than every peer, default and tuned';
    const relock = figure(results, 'contention', 'relock', 'waitP99Ms');
    const peers = peerFigures(results, 'contention', 'waitP99Ms');
    goals.push(relock === undefined || peers.length === 0
      ? missing(goal, 'scenario 3 with relock and a peer')
      : {
          goal,
          pass: peers.every(([, v]) => relock * 10 <= v),
          detail: `relock ${fmt(relock, 1)} ms; ${peers.map(([i, v]) => `${i} ${fmt(v, 1)} ms (${fmt(v / relock, 1)}×)`).join(', ')}`,
        });
  }
  {
    const goal = 'Contention: critical sections per second at least 2× the best peer, default or tuned';
    const relock = figure(results, 'contention', 'relock', 'csPerSec');
    const best = peerFigures(results, 'contention', 'csPerSec').reduce<[Impl, number] | undefined>((b, p) => (b === undefined || p[1] > b[1] ? p : b), undefined);
    goals.push(relock === undefined || best === undefined
      ? missing(goal, 'scenario 3 with relock and a peer')
      : { goal, pass: relock >= 2 * best[1], detail: `relock ${fmt(relock)}/s = ${fmt(relock / best[1], 1)}× ${best[0]} ${fmt(best[1])}/s` });
  }
  goals.push(...costGoals(results));
  {
    const goal = 'While waiting, Redis requests follow releases, not time';
    const stalled = figure(results, 'waiters', 'relock', 'stalledCommandsPerSec');
    const perHandoff = figure(results, 'waiters', 'relock', 'redisCommandsPerAcquire');
    // Per release: the release, one woken waiter per process, the winner's acquire, latch clean-up.
    goals.push(stalled === undefined || perHandoff === undefined
      ? missing(goal, 'scenario 4 with relock')
      : {
          goal,
          pass: stalled <= 10 && perHandoff <= 10,
          detail: `relock: ${fmt(stalled, 1)} requests/s from 999 waiters while nothing is released (goal ≤ 10); ${fmt(perHandoff, 1)} requests per hand-off (goal ≤ 10 with 4 processes)`,
        });
  }
  {
    const goal = '100,000 held locks (default 30 s lease): at most one renewal call per 100 locks per interval';
    const per100 = figure(results, 'watchdog', 'relock', 'callsPer100Renewals', DEFAULT_WATCHDOG);
    goals.push(per100 === undefined
      ? missing(goal, 'scenario 5 with relock')
      : { goal, pass: per100 <= 1.05, detail: `relock: ${fmt(per100, 3)} calls per 100 renewals (≤ 1.05: the last batch of a renewal tick may be partial)` });
  }
  {
    const goal = '100,000 held locks (default 30 s lease): event-loop delay p99 under 20 ms';
    const p99 = figure(results, 'watchdog', 'relock', 'eventLoopDelayP99Ms', DEFAULT_WATCHDOG);
    const max = figure(results, 'watchdog', 'relock', 'eventLoopDelayMaxMs', DEFAULT_WATCHDOG);
    goals.push(p99 === undefined ? missing(goal, 'scenario 5 with relock') : { goal, pass: p99 < 20, detail: `relock: p99 ${fmt(p99, 1)} ms (max ${fmt(max ?? NaN, 0)} ms)` });
  }
  return goals;
}
