import { describe, expect, it } from '@jest/globals';
import { useRedis } from '../support/harness.js';
import { lockClient, serverTime, subscribers, uniqueName, waitUntil, Worker } from '../support/helpers.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';

const env = useRedis();

async function worker(options: Record<string, unknown> = {}): Promise<{ w: Worker; clientId: string; dateNow: number }> {
  const w = new Worker('semaphore-worker', { url: env.server.url, ...options });
  env.workers.push(w);
  const ready = await w.next('ready', 60_000);
  return { w, clientId: String(ready.clientId), dateNow: Number(ready.dateNow) };
}

describe('expirable permits across processes', () => {
  it('20 workers in 3 processes on a limit of 3 never have more than 3 inside (independent INCR/DECR oracle)', async () => {
    const name = uniqueName();
    const oracle = uniqueName('oracle');
    await lockClient(env.redis).getPermitExpirableSemaphore(name).setPermits(3);
    const procs = await Promise.all(Array.from({ length: 3 }, () => worker()));
    procs.forEach(({ w }, i) => w.send({ cmd: 'loop', kind: 'expirable', name, oracle: `counter:${oracle}`, workers: i === 0 ? 6 : 7, rounds: 12, holdMs: 5 }));
    const results = await Promise.all(procs.map(({ w }) => w.next('looped', 60_000)));
    expect(results.map((r) => r.error)).toEqual([undefined, undefined, undefined]);
    expect(Number(await env.redis.get(`${oracle}:max`))).toBeLessThanOrEqual(3);
    expect(Number(await env.redis.get(`${oracle}:max`))).toBeGreaterThanOrEqual(2);
    expect(await env.redis.get(oracle)).toBe('0');
    expect(await lockClient(env.redis).getPermitExpirableSemaphore(name).acquiredPermits()).toBe(0);
  }, 120_000);

  it('20 workers in 3 processes: never more than 3 inside while holders are killed with SIGKILL; the killed permits come back after their lease (known failure 19)', async () => {
    const name = uniqueName();
    const oracle = uniqueName('oracle');
    const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(name);
    await semaphore.setPermits(3);
    const loop = (workers: number): Record<string, unknown> => ({ cmd: 'loop', kind: 'expirable', name, oracle: `expiring:${oracle}`, workers, rounds: 15, leaseMs: 1000, holdMs: 8 });
    const live = await Promise.all([6, 7, 7].map(async (workers) => ({ ...(await worker()), workers })));
    for (const { w, workers } of live) w.send(loop(workers));
    const killedPermits: string[] = [];
    for (let kill = 0; kill < 3; kill++) {
      const victim = (await waitUntil(
        async () => {
          const held = await env.redis.zRange(name, 0, -1);
          const proc = live.find((p) => held.some((id) => id.startsWith(`${p.clientId}-`)));
          return proc ? { proc, ids: held.filter((id) => id.startsWith(`${proc.clientId}-`)) } : undefined;
        },
        10_000,
        2,
        'a worker holding a permit',
      ))!;
      victim.proc.w.kill('SIGKILL');
      await victim.proc.w.exited;
      killedPermits.push(...victim.ids);
      live.splice(live.indexOf(victim.proc), 1);
      const replacement = { ...(await worker()), workers: victim.proc.workers };
      replacement.w.send(loop(replacement.workers));
      live.push(replacement);
    }
    const results = await Promise.all(live.map(({ w }) => w.next('looped', 60_000)));
    expect(results.map((r) => r.error).filter(Boolean)).toEqual([]);
    expect(killedPermits.length).toBeGreaterThanOrEqual(3);
    expect(Number(await env.redis.get(`${oracle}:max`))).toBeLessThanOrEqual(3);
    expect(Number(await env.redis.get(`${oracle}:max`))).toBeGreaterThanOrEqual(2);
    for (const id of killedPermits) expect(await env.redis.zScore(name, id)).toBeNull();
    await waitUntil(async () => (await semaphore.acquiredPermits()) === 0, 2000, 20, 'every permit back');
  }, 120_000);

  // The two tests below time a permit's return after its holder was killed against a bound 300 ms (the
  // permit's lease) or 150 ms (the watchdog's lease) above the design's: a round that failed while this
  // process's loop or Redis stalled past 100 ms (stallTolerant with probeReplies, as in
  // test/fair-lock/processes.test.ts) is repeated, up to 3 rounds, with fresh names, its worker killed and
  // its permit released; a waiter that does not retry at the nearest expiry fails every round.
  it('a killed holder\'s permit returns once its lease has passed, not before', async () => {
    const late = await stallTolerant(async (_, slowReply) => {
      const name = uniqueName();
      const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(name);
      await semaphore.setPermits(1);
      const { w } = await worker();
      let id: string | undefined;
      let stop = (): void => undefined;
      try {
        w.send({ cmd: 'acquire', name, leaseMs: 1000 });
        const acquired = await w.next('acquired');
        const expiry = (await env.redis.zScore(name, (acquired.ids as string[])[0]!))!;
        w.kill('SIGKILL');
        await w.exited;
        expect(await semaphore.tryAcquire(0, 5, 's')).toBeUndefined();
        stop = probeReplies(env.redis, slowReply);
        id = await semaphore.tryAcquire(5, 5, 's');
        stop();
        const grantedAt = (await env.redis.zScore(name, id!))! - 5000;
        expect(grantedAt).toBeGreaterThanOrEqual(expiry);
        expect(grantedAt - expiry).toBeLessThan(300);
        return grantedAt - expiry;
      } finally {
        stop();
        w.kill('SIGKILL');
        if (id) await semaphore.release(id);
      }
    }, 100);
    process.stdout.write(`permits: a killed holder's permit granted again ${Math.round(late)} ms after its expiry (server time)\n`);
  }, 120_000);

  it('a killed holder\'s watchdog permit returns within one lockWatchdogTimeout', async () => {
    const took = await stallTolerant(async (_, slowReply) => {
      const name = uniqueName();
      const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(name);
      await semaphore.setPermits(1);
      const { w } = await worker({ lockWatchdogTimeout: 1000 });
      let id: string | undefined;
      let stop = (): void => undefined;
      try {
        w.send({ cmd: 'acquire', name });
        expect((await w.next('acquired')).ok).toBe(true);
        stop = probeReplies(env.redis, slowReply);
        const killedAt = performance.now();
        w.kill('SIGKILL');
        id = await semaphore.tryAcquire(5, 'seconds');
        const took = performance.now() - killedAt;
        stop();
        expect(id).toBeDefined();
        expect(took).toBeLessThan(1150);
        return took;
      } finally {
        stop();
        w.kill('SIGKILL');
        if (id) await semaphore.release(id);
      }
    }, 100);
    process.stdout.write(`permits: a killed holder's watchdog permit (lease 1,000 ms) back after ${Math.round(took)} ms\n`);
  }, 120_000);

  it('two clients whose clocks differ by two hours (far more than the lease) do not over-admit: expiry uses Redis server time only (known failure 18)', async () => {
    const name = uniqueName();
    const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(name);
    await semaphore.setPermits(1);
    const hour = 3_600_000;
    const behind = await worker({ clockOffsetMs: -hour, lockWatchdogTimeout: 1500 });
    const ahead = await worker({ clockOffsetMs: hour, lockWatchdogTimeout: 1500 });
    expect(behind.dateNow - Date.now()).toBeLessThan(-hour + 10_000);
    expect(ahead.dateNow - Date.now()).toBeGreaterThan(hour - 10_000);

    const before = await serverTime(env.redis);
    behind.w.send({ cmd: 'acquire', name, leaseMs: 1500 });
    const first = await behind.w.next('acquired');
    const after = await serverTime(env.redis);
    const firstExpiry = (await env.redis.zScore(name, (first.ids as string[])[0]!))!;
    expect(firstExpiry).toBeGreaterThanOrEqual(before + 1500);
    expect(firstExpiry).toBeLessThanOrEqual(after + 1500);

    ahead.w.send({ cmd: 'acquire', name, leaseMs: 1500, waitMs: 0 });
    expect((await ahead.w.next('acquired')).ok).toBe(false);
    expect(await env.redis.zCard(name)).toBe(1);

    ahead.w.send({ cmd: 'acquire', name, waitMs: 5000 });
    const second = await ahead.w.next('acquired');
    expect(second.ok).toBe(true);
    const secondExpiry = (await env.redis.zScore(name, (second.ids as string[])[0]!))!;
    const now = await serverTime(env.redis);
    expect(secondExpiry - 1500).toBeGreaterThanOrEqual(firstExpiry);
    expect(secondExpiry).toBeLessThanOrEqual(now + 1500);
    expect(await env.redis.zCard(name)).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(await env.redis.zScore(name, (second.ids as string[])[0]!)).toBeGreaterThan(await serverTime(env.redis));
  }, 120_000);

  it('two processes each needing 2 of 2 permits: the waiting one gets them within milliseconds of the release', async () => {
    const name = uniqueName();
    const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(name);
    await semaphore.setPermits(2);
    const [a, b] = await Promise.all([worker(), worker()]);
    const latencies: number[] = [];
    for (let i = 0; i < 10; i++) {
      const [holder, waiter] = i % 2 === 0 ? [a, b] : [b, a];
      holder.w.send({ cmd: 'acquire', name, permits: 2 });
      expect((await holder.w.next('acquired')).ok).toBe(true);
      waiter.w.send({ cmd: 'acquire', name, permits: 2, waitMs: 20_000 });
      await subscribers(env.redis, semaphore.channel);
      holder.w.send({ cmd: 'release', name });
      const released = await holder.w.next('released');
      const acquired = await waiter.w.next('acquired');
      expect(acquired.ok).toBe(true);
      latencies.push(Number(acquired.at) - Number(released.at));
      waiter.w.send({ cmd: 'release', name });
      await waiter.w.next('released');
    }
    latencies.sort((x, y) => x - y);
    expect(latencies[Math.floor(latencies.length / 2)]!).toBeLessThan(30);
    expect(latencies.at(-1)!).toBeLessThan(1000);
  }, 120_000);
});
