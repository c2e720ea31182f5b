import type { Figures } from '../measure.js';
import { inRounds, redisFigures, type Row, type Scenario } from '../scenario.js';
import { holdingLoop } from './holding.js';

const PERMITS = 4;
const TASKS = 16;
const HOLD_MS = 2;
const THINK_MS = 1;

/**
 * Scenario 6: a semaphore of 4 permits shared by 16 tasks in one process, each holding a permit 2 ms
 * and thinking 1 ms. relock takes part when its `getSemaphore` exists in this build.
 */
export const semaphore: Scenario = {
  id: 6,
  key: 'semaphore',
  title: 'Semaphore: 4 permits, 16 tasks',
  description: `${TASKS} tasks share ${PERMITS} permits: acquire one, hold ${HOLD_MS} ms, release, think ${THINK_MS} ms.`,
  columns: [
    { figure: 'acquisitionsPerSec', heading: 'acquisitions/s', decimals: 0 },
    { figure: 'waitP50Ms', heading: 'wait p50 ms', decimals: 2 },
    { figure: 'waitP99Ms', heading: 'wait p99 ms', decimals: 1 },
    { figure: 'waitMaxMs', heading: 'wait max ms', decimals: 1 },
    { figure: 'redisCommandsPerAcquire', heading: 'requests/acquire', decimals: 2 },
  ],
  async run(ctx) {
    const withSemaphore = ctx.adapters.filter((a) => a.semaphore !== undefined);
    const skipped: Row[] = ctx.adapters.filter((a) => !a.semaphore && a.semaphoreMissing).map((a) => ({ impl: a.impl, figures: {}, skipped: a.semaphoreMissing! }));
    const measured = await inRounds(ctx, withSemaphore, ctx.quick ? 2 : 3, 's6', async (adapter, round): Promise<Figures> => {
      const shared = adapter.semaphore!(`bench:${ctx.runId}:s6:${adapter.impl}:${round}`, PERMITS);
      await shared.ready();
      const { wait, result } = await holdingLoop(ctx, adapter, {
        mutexes: Array.from({ length: TASKS }, () => shared.task()),
        holdMs: HOLD_MS,
        thinkMs: THINK_MS,
        warmMs: ctx.quick ? 300 : 1000,
        measureMs: ctx.quick ? 1500 : 5000,
      });
      return { acquisitionsPerSec: wait.count / result.seconds, ...wait.figures('wait'), ...redisFigures(ctx, adapter, result, wait.count) };
    });
    return [...measured, ...skipped];
  },
};
