/**
 * The goals of issue 8, checked against a run's results and printed next to them (never asserted by
 * tests: the figures depend on the machine).
 */
import type { Impl } from './adapters/types.js';
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

const PEERS: readonly Impl[] = ['redlock', 'sesamecare-redlock', 'redis-semaphore'];

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

export function evaluateGoals(results: Results): GoalResult[] {
  const goals: GoalResult[] = [];

  {
    const goal = 'Uncontended cycle at least 0.9× the floor';
    const relock = figure(results, 'uncontended', 'relock', 'cyclesPerSec');
    const floor = figure(results, 'uncontended', 'floor', 'cyclesPerSec');
    goals.push(relock === undefined || floor === undefined
      ? missing(goal, 'scenario 1 with relock and floor')
      : { goal, pass: relock >= 0.9 * floor, detail: `relock ${fmt(relock)}/s = ${fmt(relock / floor, 2)}× floor ${fmt(floor)}/s` });
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
    const goal = 'Uncontended cycle ahead of every peer';
    const relock = figure(results, 'uncontended', 'relock', 'cyclesPerSec');
    const peers = peerFigures(results, 'uncontended', 'cyclesPerSec');
    goals.push(relock === undefined || peers.length === 0
      ? missing(goal, 'scenario 1 with relock and a peer')
      : { goal, pass: peers.every(([, v]) => relock > v), detail: `relock ${fmt(relock)}/s; ${peers.map(([i, v]) => `${i} ${fmt(v)}/s`).join(', ')}` });
  }
  {
    const goal = '64 tasks on distinct keys at least 1.5× the best peer';
    const relock = figure(results, 'distinct-keys', 'relock', 'cyclesPerSec');
    const peers = peerFigures(results, 'distinct-keys', 'cyclesPerSec');
    const best = peers.reduce<[Impl, number] | undefined>((b, p) => (b === undefined || p[1] > b[1] ? p : b), undefined);
    goals.push(relock === undefined || best === undefined
      ? missing(goal, 'scenario 2 with relock and a peer')
      : { goal, pass: relock >= 1.5 * best[1], detail: `relock ${fmt(relock)}/s = ${fmt(relock / best[1], 2)}× ${best[0]} ${fmt(best[1])}/s` });
  }
  {
    const goal = 'Contention: wait p99 at least 10× lower than every peer';
    const relock = figure(results, 'contention', 'relock', 'waitP99Ms');
    const peers = peerFigures(results, 'contention', 'waitP99Ms');
    goals.push(relock === undefined || peers.length === 0
      ? missing(goal, 'scenario 3 with relock and a peer')
      : { goal, pass: peers.every(([, v]) => relock * 10 <= v), detail: `relock ${fmt(relock, 1)} ms; ${peers.map(([i, v]) => `${i} ${fmt(v, 1)} ms (${fmt(v / relock, 1)}×)`).join(', ')}` });
  }
  {
    const goal = 'Contention: at least 2× the critical sections per second of every peer';
    const relock = figure(results, 'contention', 'relock', 'csPerSec');
    const peers = peerFigures(results, 'contention', 'csPerSec');
    goals.push(relock === undefined || peers.length === 0
      ? missing(goal, 'scenario 3 with relock and a peer')
      : { goal, pass: peers.every(([, v]) => relock >= 2 * v), detail: `relock ${fmt(relock)}/s; ${peers.map(([i, v]) => `${i} ${fmt(v)}/s (${fmt(relock / v, 1)}×)`).join(', ')}` });
  }
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
