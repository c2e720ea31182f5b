/** Faults of the lock holder's process: killed, stopped, its event loop blocked; permit holders of a semaphore killed. */
import { setTimeout as sleep } from 'node:timers/promises';
import { blockWorker, killWorker, pauseWorker } from '../nemesis.js';
import type { Entry, Scenario, Setup } from '../scenario.js';

const LEASE_MS = 600;
const KILLS_QUICK = 3;
const PERMITS = 3;

/**
 * Holders SIGKILLed inside their section, one at a time: of the fenced lock (`permits` 1) or of a
 * permit-expirable semaphore. After each kill the nemesis waits for the entry that took the dead
 * holder's lock or permit: by another worker, while every other permit was held (see liveness.ts).
 */
export function holderKills(scenario: Pick<Scenario, 'name' | 'title' | 'expect'>, permits: number, killsFull: number, base: Partial<Setup> = {}): Scenario {
  /** Live workers kept besides the victim (full mode forks a replacement per kill). */
  const contenders = Math.max(3, permits + 1);
  return {
    ...scenario,
    // Quick mode starts a worker per kill plus the contenders, so nothing is forked while it runs (a fork
    // with tsx costs a second of CPU, several on a loaded machine) and the contenders are left for the
    // next scenarios; full mode forks a replacement per kill.
    setup: (quick) => ({
      workers: quick ? KILLS_QUICK + contenders : contenders + 1, leaseMs: LEASE_MS, ...(permits > 1 ? { mode: 'semaphore' as const, permits } : {}), ...base,
    }),
    async nemesis(ctx) {
      const runs = ctx.quick ? KILLS_QUICK : killsFull;
      const spawns: Array<Promise<string>> = [];
      const othersOpen = (e: Entry): number => ctx.openSections().filter((o) => o.sec !== e.sec).length;
      for (let i = 0; i < runs; i++) {
        while (ctx.workerIds().length < contenders && spawns.length > 0) await spawns.shift();
        const entry = await ctx.nextEnter(15_000);
        await sleep(Math.random() * 40);
        await killWorker(ctx, entry.w, ctx.openSections().some((e) => e.sec === entry.sec) ? entry.sec : undefined);
        if (!ctx.quick) spawns.push(ctx.spawn());
        await ctx.nextEnter(ctx.leaseMs + 10_000, (e) => e.w !== entry.w && othersOpen(e) >= permits - 1);
      }
      await Promise.all(spawns);
      await sleep(ctx.leaseMs);
      return runs;
    },
  };
}

export const holderKill = holderKills({
  name: 'holder-kill',
  title: 'holder SIGKILLed inside its critical section',
  expect: 'none: the killed holder cannot act; its key expires within one lease and a waiter enters',
}, 1, 25);

const semaphoreHolderKill = holderKills({
  name: 'semaphore-holder-kill',
  title: `permit holders of a permit-expirable semaphore (${PERMITS} permits; ${LEASE_MS} ms leases and watchdog-renewed permits alternately) SIGKILLed inside their section`,
  expect: `none: never more than ${PERMITS} sections open at once (an entry beyond that is an unexpected overlap); a killed holder's permit expires within one lease ` +
    `(its own or the watchdog's) and a waiter takes it. Recovery is measured from the kill to the first entry by another worker while the ${PERMITS - 1} other permits ` +
    'were held by live sections, so that it took the dead holder\'s permit: an upper bound (a free permit nobody waits for counts until someone does)',
}, PERMITS, 20);

/** The holder stopped for k leases: by SIGSTOP (anywhere in its section) or an event-loop block between its last check and its write. */
export function paused(how: 'sigstop' | 'block', k: number, prefix = 'holder', base: Partial<Setup> = {}): Scenario {
  return {
    name: `${prefix}-${how}-${k}x`,
    title: how === 'sigstop' ? `holder SIGSTOPped for ${k}× its lease, then SIGCONT` : `holder's event loop blocked for ${k}× its lease between its last lock check and its write`,
    expect: 'the paused holder overlaps the next holder until it runs again (a lease cannot prevent it); its late write must be rejected by the fenced resource',
    excuses: ['holder-paused'],
    setup: () => ({ workers: 3, leaseMs: LEASE_MS, ...base }),
    async nemesis(ctx) {
      const runs = ctx.quick ? 1 : 10;
      const pauseMs = k * ctx.leaseMs;
      for (let i = 0; i < runs; i++) {
        const entry = await ctx.nextEnter(15_000);
        if (how === 'sigstop') {
          await sleep(10);
          await pauseWorker(ctx, entry.w, pauseMs);
        } else {
          blockWorker(ctx, entry.w, pauseMs);
          await ctx.nextExit(entry.sec, pauseMs + 10_000);
        }
        await ctx.nextEnter(10_000, (e) => e.w !== entry.w);
        await sleep(ctx.leaseMs / 2);
      }
      return runs;
    },
  };
}

export const processScenarios: Scenario[] = [holderKill, paused('sigstop', 1.5), paused('sigstop', 3), paused('block', 1.5), paused('block', 3), semaphoreHolderKill];
