/**
 * The memory scenario's measurements, in a worker process of their own (worker.ts, run with
 * `--expose-gc` and a young generation large enough that a sample's cycles allocate without a collection).
 */
import { PerformanceObserver } from 'node:perf_hooks';
import type { Adapter, Release } from './adapters/types.js';
import { median, type Figures } from './measure.js';

const gc = (): void => globalThis.gc!();

/**
 * Bytes allocated per uncontended acquire + release cycle: the growth of the heap over `cycles` cycles
 * from a collected heap, in samples that saw no collection (a sample with one is discarded); the median
 * of `samples` such samples, NaN when every sample saw a collection.
 */
export async function allocatedPerCycle(adapter: Adapter, name: string, cycles: number, samples: number): Promise<number> {
  const mutex = adapter.mutex(name);
  for (let i = 0; i < cycles; i++) {
    await mutex.acquire();
    await mutex.release();
  }
  const collections: number[] = [];
  const observer = new PerformanceObserver((list) => collections.push(...list.getEntries().map((e) => e.startTime)));
  observer.observe({ entryTypes: ['gc'] });
  const bytes: number[] = [];
  try {
    for (let s = 0; s < samples; s++) {
      gc();
      await new Promise((resolve) => setImmediate(resolve));
      const from = performance.now();
      const before = process.memoryUsage().heapUsed;
      for (let i = 0; i < cycles; i++) {
        await mutex.acquire();
        await mutex.release();
      }
      const grown = process.memoryUsage().heapUsed - before;
      const to = performance.now();
      await new Promise((resolve) => setImmediate(resolve));
      if (!collections.some((t) => t >= from && t <= to)) bytes.push(grown / cycles);
    }
  } finally {
    observer.disconnect();
  }
  return median(bytes);
}

/**
 * Heap bytes per hold while `count` locks are held and renewed by the library (`take` is `hold` or
 * `handleHold`): the growth of the collected heap, over `count` (what the caller keeps of each hold,
 * its release function, included: the same for every library). Releases them all after.
 */
export async function heapPerHold(take: (name: string) => Promise<Release>, prefix: string, count: number): Promise<number> {
  gc();
  const before = process.memoryUsage().heapUsed;
  const releases: Release[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 256 }, async () => {
      while (next < count) releases.push(await take(`${prefix}:${next++}`));
    }),
  );
  gc();
  const perHold = (process.memoryUsage().heapUsed - before) / count;
  for (let i = 0; i < releases.length; i += 256) await Promise.all(releases.slice(i, i + 256).map((release) => release()));
  return perHold;
}

/** The figures of the memory scenario for one library. */
export async function memoryFigures(adapter: Adapter, prefix: string, holds: number, cycles: number, samples: number): Promise<Figures> {
  const figures: Figures = { allocatedBytesPerCycle: await allocatedPerCycle(adapter, `${prefix}:cycle`, cycles, samples) };
  if (adapter.hold) figures.heapBytesPerHold = await heapPerHold(adapter.hold.bind(adapter), `${prefix}:hold`, holds);
  if (adapter.handleHold) figures.heapBytesPerHandleHold = await heapPerHold(adapter.handleHold.bind(adapter), `${prefix}:handle`, holds);
  return figures;
}
