import type { Scenario } from '../scenario.js';
import { cycleColumns, runCycles } from './cycles.js';

/** Scenario 1: one task acquiring and releasing a free lock, back to back. */
export const uncontended: Scenario = {
  id: 1,
  key: 'uncontended',
  title: 'Uncontended acquire + release, one task',
  description: 'One task locks and unlocks its own key back to back; cycle latency is acquire + release.',
  columns: cycleColumns(3),
  run: (ctx) => runCycles(ctx, 's1', 1),
};
