import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it } from '@jest/globals';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName, Worker } from '../support/helpers.js';

const env = useRedis();

async function worker(options: Record<string, unknown> = {}): Promise<Worker> {
  const w = new Worker('lock-worker', { url: env.server.url, ...options });
  env.workers.push(w);
  await w.next('ready');
  return w;
}

describe('across processes', () => {
  it('three processes incrementing a Redis counter under one lock lose no update', async () => {
    const name = uniqueName();
    const key = uniqueName('counter');
    const procs = await Promise.all([worker(), worker(), worker()]);
    for (const w of procs) w.send({ cmd: 'counter', name, key, rounds: 40 });
    await Promise.all(procs.map((w) => w.next('counted', 30_000)));
    expect(await env.redis.get(key)).toBe('120');
  }, 40_000);

  it('a holder killed with SIGKILL frees the lock for a waiter within one lease (known failure 14)', async () => {
    // The waiter gets no message (the holder dies): its timer on the holder's TTL wakes it at the lease's
    // end. A round in which this process's event loop stalled past 200 ms while it waited (a clean-clone
    // whole-suite run on 2 cores once woke it 1,307 ms after the kill) says nothing of that timer and is
    // repeated, at most 3 rounds; without the timer the waiter waits its whole 10 s.
    const lease = 1000;
    for (let round = 1; ; round++) {
      const holder = await worker({ lockWatchdogTimeout: lease });
      const name = uniqueName();
      holder.send({ cmd: 'acquire', name });
      expect((await holder.next('acquired')).ok).toBe(true);
      const client = lockClient(env.redis);
      const lag = monitorEventLoopDelay({ resolution: 5 });
      lag.enable();
      const waiting = client.getLock(name).tryLock(10, 'seconds');
      const ttlAtKill = Number(await env.redis.pTTL(client.getLock(name).key));
      const killedAt = performance.now();
      holder.kill('SIGKILL');
      expect(await waiting).toBe(true);
      const recovery = performance.now() - killedAt;
      lag.disable();
      if (recovery >= lease + 100 && lag.max / 1e6 > 200 && round < 3) continue;
      expect(recovery).toBeLessThan(lease + 100);
      expect(recovery).toBeGreaterThan(ttlAtKill - 100);
      break;
    }
  });

  it('a holder frozen past its lease (SIGSTOP) loses the lock: another acquires, and on resume it is told and does not revive the key (known failure 7)', async () => {
    const lease = 600;
    const frozen = await worker({ lockWatchdogTimeout: lease });
    const name = uniqueName();
    frozen.send({ cmd: 'acquire', name });
    expect((await frozen.next('acquired')).ok).toBe(true);
    frozen.kill('SIGSTOP');
    const client = lockClient(env.redis);
    const second = client.getLock(name);
    expect(await second.tryLock(3, 'seconds')).toBe(true);
    frozen.kill('SIGCONT');
    const lost = await frozen.next('lost', 5000);
    expect(lost.name).toBe(name);
    expect(await second.isHeldByCurrentContext()).toBe(true);
    expect(Object.keys(await env.redis.hGetAll(second.key))).toEqual([expect.stringMatching(/:/), 'kind']);
    frozen.send({ cmd: 'release', name });
    await frozen.next('released').catch(() => undefined);
    expect(await second.isHeldByCurrentContext()).toBe(true);
    await second.unlock();
  });

  it('an event-loop block longer than the lease: the holder is told its lock is lost when it resumes', async () => {
    const lease = 600;
    const blocked = await worker({ lockWatchdogTimeout: lease });
    const name = uniqueName();
    blocked.send({ cmd: 'acquire', name });
    expect((await blocked.next('acquired')).ok).toBe(true);
    blocked.send({ cmd: 'block', ms: 1500 });
    const unblocked = await blocked.next('unblocked');
    const lost = await blocked.next('lost', 3000);
    expect(Number(lost.at) - Number(unblocked.at)).toBeLessThan(lease / 3 + 100);
  });
});
