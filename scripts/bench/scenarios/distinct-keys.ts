import type { Scenario } from '../scenario.js';
import { cycleColumns, runCycles } from './cycles.js';

/** Scenario 2: 64 concurrent tasks, each cycling its own lock. */
export const distinctKeys: Scenario = {
  id: 2,
  key: 'distinct-keys',
  title: '64 tasks on distinct keys',
  description: '64 concurrent tasks in one process, each locking and unlocking its own key back to back.',
  columns: cycleColumns(2),
  run: (ctx) => runCycles(ctx, 's2', 64),
};
