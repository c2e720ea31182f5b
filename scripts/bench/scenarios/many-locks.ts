import { PerformanceObserver } from 'node:perf_hooks';
import { isFloor } from '../adapters/types.js';
import { now, type Figures } from '../measure.js';
import { inRounds, redisFigures, type Scenario } from '../scenario.js';
import { withRatiosOf } from './cycles.js';
import { holdingLoop } from './holding.js';

const LOCKS = 1000;
/** Tasks per lock: one holds, two wait. */
const PER_LOCK = 3;
const HOLD_MS = 1;

/**
 * Scenario 7: 1,000 locks with 3 tasks each in one process (one holds, two wait), each task taking its
 * lock, holding it 1 ms and queueing again at once: the waiting path's own cost. Figures: acquisitions per
 * second, this process's CPU per acquisition (`process.cpuUsage` over the window, every library in the
 * same process and rounds), the share of it spent in garbage collection (`perf_hooks` GC entries), and
 * Redis requests per acquisition. `×best peer` compares CPU per acquisition (lower is better: 0.5× is
 * half the best peer's CPU); the floor does not wait, so there is no `×floor`.
 */
export const manyLocks: Scenario = {
  id: 7,
  key: 'many-locks',
  title: `${LOCKS.toLocaleString('en-US')} locks × ${PER_LOCK - 1} waiters`,
  description: `${LOCKS * PER_LOCK} tasks in one process, ${PER_LOCK} per lock: acquire, hold ${HOLD_MS} ms, release, again. CPU = this process's user + system time per acquisition; GC = its share spent collecting garbage.`,
  columns: [
    { figure: 'acquiresPerSec', heading: 'acquisitions/s', decimals: 0 },
    { figure: 'clientCpuUsPerAcquire', heading: 'CPU µs/acquisition', decimals: 0 },
    { figure: 'xBestPeer', heading: '×best peer (CPU)', decimals: 2 },
    { figure: 'gcShare', heading: 'GC % of CPU', decimals: 0 },
    { figure: 'redisCommandsPerAcquire', heading: 'requests/acquisition', decimals: 2 },
    { figure: 'waitP99Ms', heading: 'wait p99 ms', decimals: 1 },
  ],
  async run(ctx) {
    const adapters = ctx.adapters.filter((a) => !isFloor(a.impl));
    const rows = await inRounds(ctx, adapters, ctx.quick ? 3 : 5, 's7', async (adapter, round): Promise<Figures> => {
      const mutexes = Array.from({ length: LOCKS * PER_LOCK }, (_, t) => adapter.mutex(`bench:${ctx.runId}:s7:${adapter.impl}:${round}:${t % LOCKS}`));
      const warmMs = ctx.quick ? 500 : 1000;
      const measureMs = ctx.quick ? 1500 : 3000;
      // The measured window as holdingLoop's closedLoop sets it (to within the microseconds between the two calls).
      const start = now() + warmMs;
      let gcMs = 0;
      const observer = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) if (entry.startTime >= start && entry.startTime < start + measureMs) gcMs += entry.duration;
      });
      observer.observe({ entryTypes: ['gc'] });
      try {
        const { wait, result } = await holdingLoop(ctx, adapter, { mutexes, holdMs: HOLD_MS, thinkMs: 0, warmMs, measureMs });
        return {
          acquiresPerSec: wait.count / result.seconds,
          ...redisFigures(ctx, adapter, result, wait.count),
          gcShare: (100 * gcMs * 1000) / result.cpuUsec,
          waitP99Ms: wait.percentile(99),
        };
      } finally {
        observer.disconnect();
      }
    });
    return withRatiosOf(rows, 'clientCpuUsPerAcquire', 'lower');
  },
};
