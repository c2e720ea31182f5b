import { IN_PROCESS_ONLY, isFloor, type Impl } from '../adapters/types.js';
import { Child } from '../children.js';
import type { Figures } from '../measure.js';
import { FULL_RUN_ONLY, type BenchContext, type Row, type Scenario } from '../scenario.js';

/** The short lease of the side-by-side runs, in ms: renewals every 1–2.5 s, so a few seconds show them. */
const SHORT_LEASE_MS = 3000;
/** relock's default `lockWatchdogTimeout` (Redisson's), in ms: renewals every 10 s. */
const DEFAULT_LEASE_MS = 30_000;

interface Run {
  impl: Impl;
  count: number;
  leaseMs: number;
  /** Part of `--quick` runs too. */
  quick: boolean;
}

/**
 * Scenario 5: one process holds 10,000 or 100,000 locks that the library keeps alive by itself; a
 * fresh process per run, so that event-loop delay and memory are its own. Side by side, every library
 * with a 3 s lease (renewals every 1 s for relock, 2.4 s for redis-semaphore, 2.5 s for redlock), then
 * relock with its default 30 s lease at 100,000 locks (the configuration the goals speak of). Figures
 * over a window of whole renewal intervals: renewal script calls per second (relock's
 * `stats().renewalCalls`; for the peers every request they send, all of which are extensions), locks
 * renewed per second, script calls per 100 renewals (each lock is renewed once per interval, so this is
 * "calls per 100 locks per interval", counted from INFO commandstats without the error of cutting
 * intervals at the window's edges), event-loop delay p99 and max (and p99 of the same process idle,
 * before it held anything: the machine's own noise), RSS, locks lost.
 */
export const watchdog: Scenario = {
  id: 5,
  key: 'watchdog',
  title: 'Watchdog cost with 10,000 and 100,000 held locks',
  description:
    'One fresh process per run holds N locks that the library renews by itself (relock: batched watchdog; redlock: `using`; redis-semaphore: a refresh timer per lock). ' +
    `Side by side with a ${SHORT_LEASE_MS / 1000} s lease for all; then relock with its default ${DEFAULT_LEASE_MS / 1000} s lease.`,
  columns: [
    { figure: 'heldLocks', heading: 'held locks', decimals: 0 },
    { figure: 'leaseSec', heading: 'lease s', decimals: 0 },
    { figure: 'renewalCallsPerSec', heading: 'renewal calls/s', decimals: 0 },
    { figure: 'locksRenewedPerSec', heading: 'locks renewed/s', decimals: 0 },
    { figure: 'callsPer100Renewals', heading: 'calls per 100 renewals', decimals: 2 },
    { figure: 'eventLoopDelayP99Ms', heading: 'event-loop delay p99 ms', decimals: 1 },
    { figure: 'eventLoopDelayMaxMs', heading: 'max ms', decimals: 0 },
    { figure: 'idleEventLoopDelayP99Ms', heading: 'p99 ms before holding', decimals: 1 },
    { figure: 'rssMb', heading: 'RSS MB', decimals: 0 },
    { figure: 'locksLost', heading: 'lost', decimals: 0 },
  ],
  async run(ctx) {
    const impls = ctx.impls.filter((i) => !isFloor(i) && !IN_PROCESS_ONLY.includes(i));
    const runs: Run[] = [
      ...impls.map((impl) => ({ impl, count: 10_000, leaseMs: SHORT_LEASE_MS, quick: impl !== 'sesamecare-redlock' })),
      ...impls.map((impl) => ({ impl, count: 100_000, leaseMs: SHORT_LEASE_MS, quick: false })),
      ...(impls.includes('relock') ? [{ impl: 'relock' as const, count: 100_000, leaseMs: DEFAULT_LEASE_MS, quick: true }] : []),
    ];
    const rows: Row[] = [];
    for (const run of runs) {
      const label = { heldLocks: run.count, leaseSec: run.leaseMs / 1000 };
      if (ctx.quick && !run.quick) {
        rows.push({ impl: run.impl, figures: label, skipped: FULL_RUN_ONLY });
        continue;
      }
      ctx.progress(`s5: ${run.impl}, ${run.count} held locks, ${run.leaseMs / 1000} s lease`);
      try {
        rows.push({ impl: run.impl, figures: { ...label, ...(await once(ctx, run)) } });
      } catch (error) {
        // A library that cannot hold this many locks on this machine is a result, not a crash of the run.
        rows.push({ impl: run.impl, figures: label, skipped: `failed: ${(error as Error).message.split('\n')[0]}` });
      }
    }
    return rows;
  },
};

async function once(ctx: BenchContext, run: Run): Promise<Figures> {
  // Whole renewal intervals: 3 (quick) or 9 of relock's 1 s with the short lease; 1 or 2 of its 10 s with the default.
  const windowMs = run.leaseMs === DEFAULT_LEASE_MS ? (ctx.quick ? 10_000 : 20_000) : ctx.quick ? 3000 : 9000;
  const child = new Child({
    kind: 'watchdog',
    impl: run.impl,
    url: ctx.probe.url,
    keyPrefix: `bench:${ctx.runId}:s5:${run.impl}:${run.count}:${run.leaseMs}`,
    count: run.count,
    leaseMs: run.leaseMs,
    windowMs,
    concurrency: 256,
  });
  try {
    return (await child.next<{ figures: Figures }>('measured', 300_000)).figures;
  } finally {
    await child.stop();
  }
}
