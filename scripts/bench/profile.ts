/**
 * `npm run bench:profile -- [--tasks 64] [--seconds 5] [--impl relock|floor]`: one library's uncontended
 * acquire + release loop (`tasks` tasks, each on its own key) for a CPU profile, on a redis-server of its
 * own. Run it under `node --cpu-prof --import tsx` (the npm script does, writing into profiles/) and read it with
 * `tsx scripts/bench/profile-summary.ts FILE.cpuprofile`: self time by function and by file.
 * `npm run bench:heap-profile` runs it under `--heap-prof` instead: read the `.heapprofile` the same way
 * (sampled bytes allocated by function and by file).
 */
import { parseArgs } from 'node:util';
import { openAdapters } from './adapters/index.js';
import type { Impl } from './adapters/types.js';
import { startRedis } from '../../test/support/redis.js';

const { values } = parseArgs({ options: { tasks: { type: 'string', default: '1' }, seconds: { type: 'string', default: '5' }, impl: { type: 'string', default: 'relock' } } });
const tasks = Number(values.tasks);
const server = await startRedis();
const adapters = await openAdapters([values.impl as Impl], { url: server.url });
try {
  const adapter = adapters.list[0];
  const end = performance.now() + Number(values.seconds) * 1000;
  let cycles = 0;
  await Promise.all(
    Array.from({ length: tasks }, async (_, t) => {
      const mutex = adapter.mutex(`profile:${t}`);
      while (performance.now() < end) {
        await mutex.acquire();
        await mutex.release();
        cycles++;
      }
    }),
  );
  process.stderr.write(`${adapter.impl}, ${tasks} task(s): ${Math.round(cycles / Number(values.seconds))} cycles/s\n`);
} finally {
  await adapters.close();
  await server.stop();
}
