import { describe, expect, it } from '@jest/globals';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName, Worker } from '../support/helpers.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';

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
    // end. The bound is 100 ms above the lease: a round that failed while this process's event loop or Redis
    // stalled past 100 ms (stallTolerant with probeReplies; a clean-clone whole-suite run on 2 cores once
    // woke it 1,307 ms after the kill) says nothing of that timer and is repeated, at most 3 rounds; without
    // the timer the waiter waits its whole 10 s, in every round.
    const lease = 1000;
    const line = await stallTolerant(async (_, slowReply) => {
      const holder = await worker({ lockWatchdogTimeout: lease });
      const name = uniqueName();
      holder.send({ cmd: 'acquire', name });
      expect((await holder.next('acquired')).ok).toBe(true);
      const waiter = lockClient(env.redis).getLock(name);
      // Called here, in the round's own task, so that the unlock in finally is the acquirer's.
      const waiting = waiter.tryLock(10, 'seconds');
      const stop = probeReplies(env.redis, slowReply);
      try {
        const ttlAtKill = Number(await env.redis.pTTL(waiter.key));
        const killedAt = performance.now();
        holder.kill('SIGKILL');
        expect(await waiting).toBe(true);
        const recovery = performance.now() - killedAt;
        stop();
        expect(recovery).toBeLessThan(lease + 100);
        expect(recovery).toBeGreaterThan(ttlAtKill - 100);
        return `holder killed with ${ttlAtKill} ms left, waiter in after ${Math.round(recovery)} ms`;
      } finally {
        stop();
        holder.kill('SIGKILL');
        if (await waiting.catch(() => false)) await waiter.unlock();
      }
    }, 100);
    process.stdout.write(`lock: ${line}\n`);
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
