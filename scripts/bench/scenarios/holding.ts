import type { Adapter, Mutex } from '../adapters/types.js';
import { Latencies, now, sleep } from '../measure.js';
import { acquireUntilGranted, closedLoop, type BenchContext, type WindowResult } from '../scenario.js';

export interface HoldingLoop {
  /** Concurrent tasks, each with its own `Mutex` from `mutexes`. */
  mutexes: readonly Mutex[];
  holdMs: number;
  thinkMs: number;
  warmMs: number;
  measureMs: number;
}

/**
 * The loop of the contended scenarios (3 and 6): each task acquires (again after each time the library
 * gave up), holds for `holdMs`, releases and thinks for `thinkMs`. Records the waits of grants in the
 * measured window, and how often the library gave up on them.
 */
export async function holdingLoop(ctx: BenchContext, adapter: Adapter, spec: HoldingLoop): Promise<{ wait: Latencies; gaveUp: number; result: WindowResult }> {
  const wait = new Latencies();
  let gaveUp = 0;
  const result = await closedLoop(ctx, adapter, spec.warmMs, spec.measureMs, spec.mutexes.length, async (task, window) => {
    const mutex = spec.mutexes[task];
    const started = now();
    const refused = await acquireUntilGranted(mutex);
    const granted = now();
    if (window.contains(granted)) {
      wait.record(granted - started);
      gaveUp += refused;
    }
    await sleep(spec.holdMs);
    await mutex.release();
    await sleep(spec.thinkMs);
  });
  return { wait, gaveUp, result };
}
