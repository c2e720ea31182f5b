/**
 * Quick A/B of the uncontended cycle (scratch tool of issue 12, not part of npm run bench): for each
 * variant (relock from this tree or from --baseline DIR, the floor; `otel` off or default), `tasks` tasks
 * lock and unlock their own keys for `seconds`, in alternating rounds; prints cycles/s and Node CPU µs
 * per cycle (process.cpuUsage) per round and their medians.
 */
import { parseArgs } from 'node:util';
import { createClient } from 'redis';
import { startRedis } from '../../test/support/redis.js';

const { values } = parseArgs({ options: { tasks: { type: 'string', default: '1' }, seconds: { type: 'string', default: '2' }, rounds: { type: 'string', default: '3' }, variants: { type: 'string', default: 'relock,floor' }, baseline: { type: 'string' } } });
const server = await startRedis();
const redis = createClient({ url: server.url });
redis.on('error', () => {});
await redis.connect();
type Mutex = { acquire(): Promise<unknown>; release(): Promise<unknown> };
const makers: Record<string, (name: string) => Mutex> = {};
const closers: Array<() => Promise<void>> = [];
for (const v of values.variants.split(',')) {
  if (v === 'floor') {
    const { floorAdapter } = await import('./adapters/floor.js');
    const a = await floorAdapter(redis);
    makers[v] = (n) => a.mutex(n);
  } else {
    const [src, otel] = v.split(':');
    const lib = (await import(src === 'base' ? `${values.baseline}/src/index.ts` : '../../src/index.js')) as typeof import('../../src/index.js');
    const client = lib.createLockClient({ redis, ...(otel === 'nootel' ? { otel: false } : {}) });
    await new Promise((r) => setTimeout(r, 200));
    makers[v] = (n) => {
      const lock = client.getLock(n);
      return { acquire: () => lock.lock(), release: () => lock.unlock() };
    };
    closers.push(() => client.shutdown());
  }
}
const tasks = Number(values.tasks);
const results: Record<string, Array<[number, number]>> = {};
for (let r = 0; r < Number(values.rounds); r++) {
  for (const [v, make] of Object.entries(makers)) {
    const run = async (ms: number): Promise<[number, number]> => {
      const end = performance.now() + ms;
      let cycles = 0;
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      await Promise.all(Array.from({ length: tasks }, async (_, t) => {
        const m = make(`cpu:${v}:${t}`);
        while (performance.now() < end) { await m.acquire(); await m.release(); cycles++; }
      }));
      const used = process.cpuUsage(cpu);
      return [cycles / ((performance.now() - t0) / 1000), (used.user + used.system) / cycles];
    };
    await run(300);
    (results[v] ??= []).push(await run(Number(values.seconds) * 1000));
  }
}
const med = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [v, rs] of Object.entries(results)) {
  console.log(`${v.padEnd(14)} ${String(Math.round(med(rs.map((x) => x[0])))).padStart(7)} cycles/s  ${med(rs.map((x) => x[1])).toFixed(1).padStart(6)} µs CPU/cycle   rounds: ${rs.map((x) => `${Math.round(x[0])}/${x[1].toFixed(1)}`).join(' ')}`);
}
for (const c of closers) await c();
await redis.close();
await server.stop();
