/**
 * `npm run bench:alloc-profile -- [--tasks 1] [--seconds 4] [--impl relock|floor]`: where one library's
 * uncontended acquire + release loop allocates, collected objects included (a `--heap-prof` profile holds
 * only what is still alive when it is written, so the garbage of a cycle does not show there). Samples
 * allocations through the inspector (`HeapProfiler.startSampling` with the objects collected by minor and
 * major GCs kept, one sample per 512 bytes on average) during the measured loop only, and prints bytes
 * allocated per cycle by function (top 30) and by file.
 */
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { openAdapters } from './adapters/index.js';
import type { Impl } from './adapters/types.js';
import { startRedis } from '../../test/support/redis.js';

interface Frame { functionName: string; url: string; lineNumber: number; columnNumber: number }
interface Node { callFrame: Frame; selfSize: number; children: Node[]; id: number }
interface Sample { size: number; nodeId: number }

const { values } = parseArgs({ options: { tasks: { type: 'string', default: '1' }, seconds: { type: 'string', default: '4' }, impl: { type: 'string', default: 'relock' }, top: { type: 'string', default: '30' } } });
const tasks = Number(values.tasks);
const server = await startRedis();
const adapters = await openAdapters([values.impl as Impl], { url: server.url });
const session = new Session();
session.connect();
try {
  const adapter = adapters.list[0];
  const loop = async (ms: number): Promise<number> => {
    const end = performance.now() + ms;
    let cycles = 0;
    await Promise.all(
      Array.from({ length: tasks }, async (_, t) => {
        const mutex = adapter.mutex(`alloc-profile:${t}`);
        while (performance.now() < end) {
          await mutex.acquire();
          await mutex.release();
          cycles++;
        }
      }),
    );
    return cycles;
  };
  await loop(1000); // warm-up
  await session.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  const cycles = await loop(Number(values.seconds) * 1000);
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: Node; samples: Sample[] } };
  const byNode = new Map<number, Node>();
  const walk = (n: Node): void => { byNode.set(n.id, n); n.children.forEach(walk); };
  walk(profile.head);
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let total = 0;
  for (const s of profile.samples) {
    const f = byNode.get(s.nodeId)!.callFrame;
    const where = f.url.replace(/^.*\/(node_modules\/|src\/|scripts\/)/, '$1') || '(native)';
    const fn = `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber + 1}:${f.columnNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + s.size);
    byFile.set(where, (byFile.get(where) ?? 0) + s.size);
    total += s.size;
  }
  const top = (map: Map<string, number>, n: number): string =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${(v / cycles).toFixed(0).padStart(6)} B  ${k}`).join('\n');
  process.stdout.write(`${adapter.impl}, ${tasks} task(s): ${cycles} cycles, ~${(total / cycles / 1024).toFixed(2)} KB allocated per cycle (sampled)\n\nBy function:\n${top(byFunction, Number(values.top))}\n\nBy file:\n${top(byFile, 12)}\n`);
} finally {
  session.disconnect();
  await adapters.close();
  await server.stop();
}
