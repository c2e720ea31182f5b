/**
 * Leader election (issue 32): five processes campaign in one election (`RLeaderElection`, a fenced lock
 * underneath) and each runs `observe()`. The leader is SIGKILLed (and replaced), SIGSTOPped for twice its
 * lease, and cut off from Redis by its proxy (blackhole, twice its lease), in turns, for 60 s (15 s quick).
 * A section of the history is a leadership: entered when `campaign()` resolved, exited when its `signal`
 * aborted (or its work ended and it resigned). The shared checkers then hold the election to: at most one
 * process believes it leads at any instant, except inside the documented pause window (a stopped leader
 * believes it until it runs again: `holder-paused`); terms strictly increase (tokens); the fenced resource
 * refuses a deposed leader's writes (fencing). This scenario adds: a new leader within one lease + 1 s of
 * a leader's SIGKILL, and every election seen by `observe()` of every process that was never faulted.
 * One process (`SPARED`) is never faulted: when it leads, the nemesis waits for the next leader, so that
 * at least one observer watches the whole run (without it, the faults could reach every process that
 * observed the elections).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { now, type WorkerEvent } from '../history.js';
import { killWorker, netFault, pauseWorker } from '../nemesis.js';
import { violation } from '../result.js';
import type { History, Scenario } from '../scenario.js';

const LEASE_MS = 1000;
const PROCESSES = 5;
/** How long after a leader's SIGKILL another process must lead: one lease plus this. */
export const ELECTION_SLACK_MS = 1000;
/** Time an observer may take to subscribe after it started: elections before that are not asked of it. */
const SUBSCRIBE_MS = 1000;

/** The process the nemesis never faults: an observer of the whole run. */
const SPARED = 'w1';

type Fault = 'kill' | 'stop' | 'cut';
const TURNS: readonly Fault[] = ['kill', 'stop', 'cut'];

/** The scenario's own checks: election time after a crash, and observe() completeness and order. */
export function checkLeaderHistory(history: History, result: { extra: Record<string, unknown> }): string[] {
  const { events, nemesis, leaseMs } = history;
  const out: string[] = [];
  const enters = events.filter((e): e is Extract<WorkerEvent, { ev: 'enter' }> => e.ev === 'enter');
  const electionMs: number[] = [];
  for (const kill of nemesis.filter((n) => n.kind === 'kill' && n.sec !== undefined)) {
    const next = enters.find((e) => e.t > kill.t0 && e.w !== kill.w);
    const ms = next ? Math.round(next.t - kill.t0) : Infinity;
    electionMs.push(ms);
    if (ms > leaseMs + ELECTION_SLACK_MS) out.push(violation('liveness', `no new leader within ${leaseMs + ELECTION_SLACK_MS} ms of ${kill.w}'s SIGKILL (${ms === Infinity ? 'none' : `${ms} ms`})`));
  }
  result.extra.electionAfterKillMs = electionMs;
  const faulted = new Set(nemesis.flatMap((n) => (n.w ? [n.w] : [])));
  const terms = enters.map((e) => ({ t: e.t, tok: e.tok! }));
  // An unfaulted process runs to the end of the run: its window ends there, not at its own last event
  // (which, for an observer that never led, is its last observation: a window the mutant shrank).
  const runEnd = events.reduce((t, e) => Math.max(t, e.t), 0);
  let observers = 0;
  let missed = 0;
  for (const start of events.filter((e) => e.ev === 'observing')) {
    if (faulted.has(start.w)) continue;
    const seen = events.filter((e): e is Extract<WorkerEvent, { ev: 'observed' }> => e.ev === 'observed' && e.w === start.w);
    observers++;
    const tokens = seen.map((e) => BigInt(e.tok));
    if (tokens.some((tok, i) => i > 0 && tok <= tokens[i - 1])) out.push(violation('tokens', `${start.w}'s observe() yielded terms out of order: ${tokens.join(', ')}`));
    const got = new Set(seen.map((e) => e.tok));
    const asked = terms.filter((x) => x.t > start.t + SUBSCRIBE_MS && x.t < runEnd - SUBSCRIBE_MS);
    const lost = asked.filter((x) => !got.has(x.tok));
    missed += lost.length;
    if (lost.length > 0) out.push(violation('liveness', `${start.w}'s observe() missed ${lost.length} of ${asked.length} election(s) (terms ${lost.map((x) => x.tok).join(', ')})`));
  }
  if (observers === 0) out.push('harness: no observer was left unfaulted');
  if (faulted.has(SPARED)) out.push(`harness: ${SPARED} was faulted`);
  result.extra.unfaultedObservers = observers;
  result.extra.observeMissed = missed;
  result.extra.terms = terms.length;
  return out;
}

export const leaderElection: Scenario = {
  name: 'leader-election',
  title: `leader election, ${PROCESSES} processes: the leader SIGKILLed, SIGSTOPped for 2 leases and cut off by its proxy for 2 leases, in turns (60 s)`,
  expect: 'only the stopped leader overlaps its successor, until it runs again (holder-paused); its writes carry a stale term and are refused',
  excuses: ['holder-paused'],
  setup: () => ({ workers: PROCESSES, leaseMs: LEASE_MS, proxy: true, mode: 'leader', workMs: [2000, 5000], thinkMs: [5, 30] }),
  async nemesis(ctx) {
    const until = now() + (ctx.quick ? 15_000 : 60_000);
    let runs = 0;
    while (now() < until) {
      const leader = ctx.holder() ?? (await ctx.nextEnter(15_000));
      if (leader.w === SPARED) {
        await ctx.nextEnter(15_000, (e) => e.w !== SPARED && e.t > leader.t).catch(() => undefined);
        continue;
      }
      await sleep(100 + Math.random() * 200);
      if (ctx.holder()?.sec !== leader.sec) continue;
      const fault = TURNS[runs % TURNS.length];
      runs++;
      if (fault === 'kill') {
        await killWorker(ctx, leader.w, leader.sec);
        await ctx.spawn();
      } else if (fault === 'stop') await pauseWorker(ctx, leader.w, 2 * ctx.leaseMs);
      else await netFault(ctx, leader.w, { kind: 'blackhole' }, 2 * ctx.leaseMs);
      await ctx.nextEnter(ctx.leaseMs + 10_000, (e) => e.w !== leader.w && e.t > leader.t);
      await sleep(ctx.leaseMs / 2);
    }
    return runs;
  },
  check: checkLeaderHistory,
};
