/** Faults of the lock holder's process: killed, stopped, its event loop blocked. */
import { setTimeout as sleep } from 'node:timers/promises';
import { blockWorker, killWorker, pauseWorker } from '../nemesis.js';
import type { Scenario } from '../scenario.js';

const LEASE_MS = 600;
const KILLS_QUICK = 3;

export const holderKill: Scenario = {
  name: 'holder-kill',
  title: 'holder SIGKILLed inside its critical section',
  expect: 'none: the killed holder cannot act; its key expires within one lease and a waiter enters',
  // Quick mode starts a worker per kill plus three, so nothing is forked while it runs (a fork with tsx
  // costs a second of CPU, several on a loaded machine) and three are left for the next scenarios;
  // full mode forks a replacement per kill.
  setup: (quick) => ({ workers: quick ? KILLS_QUICK + 3 : 4, leaseMs: LEASE_MS }),
  async nemesis(ctx) {
    const runs = ctx.quick ? KILLS_QUICK : 25;
    const spawns: Array<Promise<string>> = [];
    for (let i = 0; i < runs; i++) {
      // Keep at least two contenders besides the victim.
      while (ctx.workerIds().length < 3 && spawns.length > 0) await spawns.shift();
      const entry = await ctx.nextEnter(15_000);
      await sleep(Math.random() * 40);
      await killWorker(ctx, entry.w);
      if (!ctx.quick) spawns.push(ctx.spawn());
      await ctx.nextEnter(ctx.leaseMs + 10_000, (e) => e.w !== entry.w);
    }
    await Promise.all(spawns);
    await sleep(ctx.leaseMs);
    return runs;
  },
};

/** The holder stopped for k leases: by SIGSTOP (anywhere in its section) or an event-loop block between its last check and its write. */
function paused(how: 'sigstop' | 'block', k: number): Scenario {
  return {
    name: `holder-${how}-${k}x`,
    title: how === 'sigstop' ? `holder SIGSTOPped for ${k}× its lease, then SIGCONT` : `holder's event loop blocked for ${k}× its lease between its last lock check and its write`,
    expect: 'the paused holder overlaps the next holder until it runs again (a lease cannot prevent it); its late write must be rejected by the fenced resource',
    setup: () => ({ workers: 3, leaseMs: LEASE_MS }),
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

export const processScenarios: Scenario[] = [holderKill, paused('sigstop', 1.5), paused('sigstop', 3), paused('block', 1.5), paused('block', 3)];
