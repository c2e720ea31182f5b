import { describe, expect, it } from '@jest/globals';
import { useRedis } from '../support/harness.js';
import { lockClient, subscribers, uniqueName, Worker } from '../support/helpers.js';

const env = useRedis();

async function worker(): Promise<Worker> {
  const w = new Worker('semaphore-worker', { url: env.server.url });
  env.workers.push(w);
  await w.next('ready', 60_000);
  return w;
}

describe('RSemaphore across processes', () => {
  it('20 workers in 3 processes on 3 permits never have more than 3 inside (independent INCR/DECR oracle)', async () => {
    const name = uniqueName();
    const oracle = uniqueName('oracle');
    await lockClient(env.redis).getSemaphore(name).trySetPermits(3);
    const procs = await Promise.all(Array.from({ length: 3 }, () => worker()));
    procs.forEach((w, i) => w.send({ cmd: 'loop', kind: 'semaphore', name, oracle: `counter:${oracle}`, workers: i === 0 ? 6 : 7, rounds: 12, holdMs: 5 }));
    const results = await Promise.all(procs.map((w) => w.next('looped', 60_000)));
    expect(results.map((r) => r.error)).toEqual([undefined, undefined, undefined]);
    expect(Number(await env.redis.get(`${oracle}:max`))).toBeLessThanOrEqual(3);
    expect(Number(await env.redis.get(`${oracle}:max`))).toBeGreaterThanOrEqual(2);
    expect(await env.redis.get(oracle)).toBe('0');
    expect(await env.redis.get(name)).toBe('3');
  }, 120_000);

  it('two processes each needing 2 of 2 permits: the waiting one gets them within milliseconds of the release', async () => {
    const name = uniqueName();
    const semaphore = lockClient(env.redis).getSemaphore(name);
    await semaphore.trySetPermits(2);
    const [a, b] = await Promise.all([worker(), worker()]);
    const latencies: number[] = [];
    for (let i = 0; i < 10; i++) {
      const [holder, waiter] = i % 2 === 0 ? [a!, b!] : [b!, a!];
      holder.send({ cmd: 'take', name, permits: 2, waitMs: 0 });
      expect((await holder.next('taken')).ok).toBe(true);
      waiter.send({ cmd: 'take', name, permits: 2, waitMs: 20_000 });
      await subscribers(env.redis, semaphore.channel);
      holder.send({ cmd: 'give', name, permits: 2 });
      const given = await holder.next('given');
      const taken = await waiter.next('taken');
      expect(taken.ok).toBe(true);
      latencies.push(Number(taken.at) - Number(given.at));
      await semaphore.release(2);
    }
    latencies.sort((x, y) => x - y);
    expect(latencies[Math.floor(latencies.length / 2)]!).toBeLessThan(30);
    expect(latencies.at(-1)!).toBeLessThan(1000);
  }, 120_000);
});
