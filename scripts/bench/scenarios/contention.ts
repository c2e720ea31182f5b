import { isFloor } from '../adapters/types.js';
import type { Figures } from '../measure.js';
import { inRounds, redisFigures, type Scenario } from '../scenario.js';
import { holdingLoop } from './holding.js';

const TASKS = 8;
const HOLD_MS = 1;
const THINK_MS = 5;

/**
 * Scenario 3: 8 tasks in one process on one lock, each holding it 1 ms and thinking 5 ms between
 * acquisitions. A wait runs from the first acquire call to the grant, through every time the library
 * gave up and was called again.
 */
export const contention: Scenario = {
  id: 3,
  key: 'contention',
  title: 'Contention: 8 tasks on one lock, 1 ms hold, 5 ms think',
  description: `${TASKS} tasks share one lock: acquire, hold ${HOLD_MS} ms, release, think ${THINK_MS} ms. Wait = first acquire call to grant (retries after a library gave up included).`,
  columns: [
    { figure: 'csPerSec', heading: 'critical sections/s', decimals: 0 },
    { figure: 'waitP50Ms', heading: 'wait p50 ms', decimals: 2 },
    { figure: 'waitP99Ms', heading: 'wait p99 ms', decimals: 1 },
    { figure: 'waitMaxMs', heading: 'wait max ms', decimals: 1 },
    { figure: 'redisCommandsPerAcquire', heading: 'requests/acquire', decimals: 2 },
    { figure: 'gaveUp', heading: 'gave up', decimals: 0 },
  ],
  run(ctx) {
    const adapters = ctx.adapters.filter((a) => !isFloor(a.impl));
    return inRounds(ctx, adapters, ctx.quick ? 2 : 3, 's3', async (adapter, round): Promise<Figures> => {
      const name = `bench:${ctx.runId}:s3:${adapter.impl}:${round}`;
      const { wait, gaveUp, result } = await holdingLoop(ctx, adapter, {
        mutexes: Array.from({ length: TASKS }, () => adapter.mutex(name)),
        holdMs: HOLD_MS,
        thinkMs: THINK_MS,
        warmMs: ctx.quick ? 300 : 1000,
        measureMs: ctx.quick ? 1500 : 5000,
      });
      return { csPerSec: wait.count / result.seconds, ...wait.figures('wait', true), ...redisFigures(ctx, adapter, result, wait.count), gaveUp };
    });
  },
};
