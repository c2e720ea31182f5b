import type { Impl } from '../adapters/types.js';
import { Child } from '../children.js';
import type { Figures } from '../measure.js';
import type { BenchContext, Row, Scenario } from '../scenario.js';
import { withRatiosOf } from './cycles.js';

/** Tuned peers differ from their defaults only in how often they poll a busy lock: nothing to measure here. */
const SAME_AS_DEFAULT: readonly Impl[] = ['redlock-tuned', 'redis-semaphore-tuned'];

/**
 * Scenario 8: memory, one fresh process per library (`--expose-gc`, a 64 MB semi-space so that a sample's
 * cycles allocate without a collection). Bytes allocated per uncontended acquire + release cycle (the
 * heap's growth over 500 cycles from a collected heap, median of samples without a collection), with
 * `×floor` and `×best peer` (lower is better); heap per held lock that the library renews by itself
 * (10,000 holds, collected heap before and after; the caller's release function included), and for relock
 * the same with the `LockHandle` of `acquire()` kept.
 */
export const memory: Scenario = {
  id: 8,
  key: 'memory',
  title: 'Memory: allocated per uncontended cycle, heap per held lock',
  description:
    'One fresh process per library. Allocated = heap growth per acquire + release over 500 cycles with no collection (median of samples). ' +
    'Held = heap per lock held and renewed by the library (10,000 holds), without and with a handle.',
  columns: [
    { figure: 'allocatedBytesPerCycle', heading: 'allocated B/cycle', decimals: 0 },
    { figure: 'xFloor', heading: '×floor', decimals: 2 },
    { figure: 'xBestPeer', heading: '×best peer', decimals: 2 },
    { figure: 'heapBytesPerHold', heading: 'heap B/held lock', decimals: 0 },
    { figure: 'heapBytesPerHandleHold', heading: 'with a handle', decimals: 0 },
  ],
  async run(ctx) {
    const rows: Row[] = [];
    for (const impl of ctx.impls.filter((i) => !SAME_AS_DEFAULT.includes(i))) {
      ctx.progress(`s8: ${impl}`);
      try {
        rows.push({ impl, figures: await once(ctx, impl) });
      } catch (error) {
        rows.push({ impl, figures: {}, skipped: `failed: ${(error as Error).message.split('\n')[0]}` });
      }
    }
    return withRatiosOf(rows, 'allocatedBytesPerCycle', 'lower');
  },
};

async function once(ctx: BenchContext, impl: Impl): Promise<Figures> {
  const task = { kind: 'memory' as const, impl, url: ctx.probe.url, keyPrefix: `bench:${ctx.runId}:s8:${impl}`, holds: 10_000, cycles: 500, samples: ctx.quick ? 5 : 15 };
  const child = new Child(ctx.baseline ? { ...task, baseline: ctx.baseline } : task, ['--max-semi-space-size=64']);
  try {
    return (await child.next<{ figures: Figures }>('measured', 300_000)).figures;
  } finally {
    await child.stop();
  }
}
