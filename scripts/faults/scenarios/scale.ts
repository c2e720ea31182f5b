/** Scale under faults: thousands of waiters whose subscriptions are killed, and many locks held and renewed. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkerEvent } from '../history.js';
import { commandCalls, cutSubscribersAcrossRelease, killSubscribers } from '../nemesis.js';
import { violation } from '../result.js';
import type { RunContext, Scenario } from '../scenario.js';
import { LEASE_MS } from './common.js';

/** How long the waiters of many-waiters may take to enter, all of them. */
const DRAIN_LIMIT_MS = 60_000;
/** Every how many subscriber kills of many-waiters the subscribers are kept down across a release. */
const CUT_EVERY = 4;
/**
 * A cut across a release ends once the lock was free, with no script call, for this long: no waiter is
 * trying (an attempt in flight reaches Redis within a few ms; a worker's event loop stalled longer than
 * this under load would only postpone the starvation to the next cut), or after `CUT_MAX_MS`.
 */
const CUT_QUIET_MS = 1000;
const CUT_MAX_MS = 3000;

export const manyWaiters: Scenario = {
  name: 'many-waiters',
  title: `thousands of waiters on one lock in two processes, each entering once; every subscriber connection killed every 300 ms until all have entered, every ${CUT_EVERY}th time kept down (proxies refuse the reconnect) across a release until the lock is free and nobody tries (at most ${CUT_MAX_MS / 1000} s)`,
  expect: 'none: a lost unlock message delays a waiter until the subscription is back (the first local waiter retries) or its timer on the holder\'s TTL fires. ' +
    `Liveness: every waiter must enter (waitersThatNeverEntered = 0) within ${DRAIN_LIMIT_MS / 1000} s`,
  // Proxies: a CLIENT KILL is healed by the client within milliseconds, often before the next release; the
  // proxies keep the subscribers down across one for certain (a lost message, every run).
  setup: (quick) => ({ workers: 2, waiters: quick ? 500 : 2000, leaseMs: LEASE_MS, workMs: [0, 2], thinkMs: [0, 5], sectionsPerWaiter: 1, proxy: true }),
  async nemesis(ctx: RunContext) {
    const evalsBefore = await commandCalls(ctx, 'evalsha');
    const started = performance.now();
    let runs = 0;
    let killed = 0;
    let cutsQuiet = 0;
    let drained = 0;
    const done = Promise.all(ctx.workerIds().map((w) => ctx.message(w, 'drained', DRAIN_LIMIT_MS).then(() => drained++, () => {})));
    while (drained < 2 && performance.now() - started < DRAIN_LIMIT_MS) {
      await Promise.race([sleep(300), done]);
      if (drained >= 2) break;
      killed += await killSubscribers(ctx);
      if (runs % CUT_EVERY === 0 && (await cutSubscribersAcrossRelease(ctx, CUT_QUIET_MS, CUT_MAX_MS))) cutsQuiet++;
      runs++;
    }
    ctx.figures.drainMs = Math.round(performance.now() - started);
    ctx.figures.subscriberConnectionsKilled = killed;
    ctx.figures.cutsAcrossReleaseQuiet = cutsQuiet;
    ctx.figures.scriptCallsPerSecond = Math.round(((await commandCalls(ctx, 'evalsha')) - evalsBefore) / ((performance.now() - started) / 1000));
    await sleep(ctx.leaseMs);
    return runs;
  },
  check(history, result) {
    const entries = new Map<string, number>();
    for (const e of history.events) {
      if (e.ev !== 'acquire' && e.ev !== 'enter') continue;
      const waiter = e.sec.slice(0, e.sec.lastIndexOf('.'));
      entries.set(waiter, (entries.get(waiter) ?? 0) + (e.ev === 'enter' ? 1 : 0));
    }
    result.extra.waiters = entries.size;
    result.extra.waitersThatNeverEntered = [...entries.values()].filter((n) => n === 0).length;
    const enters = history.events.filter((e) => e.ev === 'enter');
    const spanS = enters.length > 1 ? (enters.at(-1)!.t - enters[0].t) / 1000 : 0;
    result.extra.sectionsPerSecond = spanS > 0 ? Math.round(enters.length / spanS) : 0;
    result.extra.scriptCallsPerSection = spanS > 0 ? Math.round(Number(result.extra.scriptCallsPerSecond) / (enters.length / spanS)) : null;
    const starved = Number(result.extra.waitersThatNeverEntered);
    return starved > 0 ? [violation('starvation', `${starved} of ${entries.size} waiter(s) never entered within ${DRAIN_LIMIT_MS / 1000} s`)] : [];
  },
};

export const manyLocks: Scenario = {
  name: 'many-locks',
  title: 'one process holds many locks and the watchdog renews them in batches (10,000 with a 1.5 s lease in quick mode, 100,000 with a 6 s lease in full mode)',
  expect: 'none (no contender); no lock may expire or be reported lost at steady state',
  setup: (quick) => ({ workers: 1, mode: 'many', leaseMs: quick ? 1500 : 6000, count: quick ? 10_000 : 100_000, holdMs: quick ? 4000 : 20_000, concurrency: 500 }),
  async nemesis(ctx: RunContext) {
    const [w] = ctx.workerIds();
    const held = await ctx.message(w, 'held', 300_000);
    const holdStarted = performance.now();
    let minPttl = Infinity;
    const sample = async (): Promise<void> => {
      const count = Number(held.count);
      const keys = Array.from({ length: 20 }, () => `${ctx.lockKey}:${Math.floor(Math.random() * count)}`);
      for (const ttl of await Promise.all(keys.map((k) => ctx.admin.pTTL(k)))) if (ttl >= 0) minPttl = Math.min(minPttl, ttl);
    };
    const released = ctx.message(w, 'released', 600_000);
    let done = false;
    void released.finally(() => (done = true));
    while (!done && performance.now() - holdStarted < 600_000) {
      await sample();
      await Promise.race([sleep(250), released]);
    }
    await released;
    ctx.figures.minPttlSeenMs = minPttl === Infinity ? null : minPttl;
    ctx.figures.expiredWhileHeld = ctx.expirations.filter((x) => x.key.startsWith(`${ctx.lockKey}:`)).length;
    return 1;
  },
  check(history, result) {
    const stats = history.events.find((e): e is Extract<WorkerEvent, { ev: 'stats' }> => e.ev === 'stats');
    if (!stats) return ['the many-locks worker reported no figures'];
    const { ev: _ev, t: _t, w: _w, ...figures } = stats;
    Object.assign(result.extra, figures);
    const holdS = Number(stats.holdMs) / 1000;
    result.extra.renewalCallsPerSecond = Math.round(Number(stats.renewalCalls) / holdS);
    result.extra.locksRenewedPerSecond = Math.round((Number(stats.locks) * 3000) / history.leaseMs);
    const violations: string[] = [];
    if (Number(stats.lost) > 0) violations.push(`${String(stats.lost)} lock(s) reported lost at steady state`);
    if (Number(result.extra.expiredWhileHeld) > 0) violations.push(`${String(result.extra.expiredWhileHeld)} held lock(s) expired`);
    if (Number(stats.releaseErrors) > 0) violations.push(`${String(stats.releaseErrors)} release(s) failed`);
    return violations;
  },
};

export const scaleScenarios: Scenario[] = [manyWaiters, manyLocks];
