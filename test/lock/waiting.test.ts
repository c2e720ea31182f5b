import { describe, expect, it } from '@jest/globals';
import { ClientClosedError, LockAcquireTimeoutError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { abandonWaits, activeTimers, callsSince, commandCalls, connect, lockClient, numsub, sleep, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis({ server: { controllable: true } });

const channelOf = (client: ReturnType<typeof lockClient>, name: string): string => client.getLock(name).channel;

describe('waiting', () => {
  it('a waiter wakes within a few ms of the unlock (pub/sub, not polling)', async () => {
    const holderClient = lockClient(env.redis);
    const waiterClient = lockClient(env.redis);
    const name = uniqueName();
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const holder = holderClient.getLock(name);
      await holder.lock();
      let acquiredAt = 0;
      const waiter = waiterClient.getLock(name);
      const waiting = waiter.tryLock(10, 'seconds').then((ok) => ((acquiredAt = performance.now()), ok));
      await waitUntil(async () => (await numsub(env.redis, holder.channel)) === 1, 2000, 2, 'the waiter to subscribe');
      await sleep(5);
      await holder.unlock();
      const unlockedAt = performance.now();
      expect(await waiting).toBe(true);
      latencies.push(acquiredAt - unlockedAt);
      await waiter.unlock();
    }
    latencies.sort((a, b) => a - b);
    expect(latencies[Math.floor(latencies.length / 2)]!).toBeLessThan(20);
  });

  it('still acquires when the release message is lost: the timer on the holder\'s TTL fires', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getLock(name).tryLock(0, 400, 'ms');
    const started = performance.now();
    const waiting = client.getLock(name).tryLock(5, 'seconds');
    await sleep(100);
    await env.redis.del(client.getLock(name).key);
    expect(await waiting).toBe(true);
    // The timer fires at the TTL (400 ms); a stalled loop delays it (300 ms measured). Without it the waiter
    // sleeps to the end of its 5 s wait.
    expect(performance.now() - started).toBeLessThan(2500);
  });

  it('still acquires promptly when the subscriber connection was killed and the message lost', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const holder = client.getLock(name);
    await holder.lock();
    const waiting = client.getLock(name).tryLock(20, 'seconds');
    await waitUntil(async () => (await numsub(env.redis, holder.channel)) === 1, 2000, 2, 'the waiter to subscribe');
    await env.redis.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub']);
    await env.redis.del(holder.key);
    const started = performance.now();
    expect(await waiting).toBe(true);
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it('after the subscriber reconnects, the first waiter in line retries, not a herd of every waiter', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const holder = client.getLock(name);
    await holder.lock();
    const base = await commandCalls(env.redis, 'evalsha');
    const waiters = Array.from({ length: 50 }, () => client.getLock(name).tryLock(30, 'seconds'));
    await waitUntil(async () => (await numsub(env.redis, holder.channel)) === 1, 5000, 5, 'the waiters to subscribe');
    const before = await callsSince(env.redis, 'evalsha', base, 100); // all 50 parked (a 100 ms sleep let late ones count as the herd)
    await env.redis.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub']);
    await waitUntil(async () => (await numsub(env.redis, holder.channel)) === 1, 5000, 5, 'the resubscription');
    await sleep(200);
    expect((await commandCalls(env.redis, 'evalsha')) - before).toBeLessThanOrEqual(5);
    await holder.unlock();
    for (const waiting of waiters) {
      expect(await waiting).toBe(true);
      await client.getLock(name).forceUnlock();
    }
  });

  it('an unlock published between a failed attempt and the subscription still wakes the waiter (known failure 15)', async () => {
    const holderClient = lockClient(env.redis);
    const waiterClient = lockClient(env.redis);
    const name = uniqueName();
    for (let i = 0; i < 60; i++) {
      const holder = holderClient.getLock(name);
      await holder.lock();
      const started = performance.now();
      const waiting = waiterClient.getLock(name).tryLock(10, 'seconds');
      await sleep(i % 3);
      await holder.unlock();
      expect(await waiting).toBe(true);
      // Without the attempt after subscribing, a missed unlock leaves the waiter asleep to the end of its 10 s wait.
      expect(performance.now() - started).toBeLessThan(2000);
      await waiterClient.getLock(name).forceUnlock();
    }
  });

  it('aborting a waiting acquire rejects with the reason and leaves no subscription, timer or hold', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getLock(name).lock();
    const timers = activeTimers();
    const controller = new AbortController();
    const waiting = client.getLock(name).acquire({ signal: controller.signal });
    await waitUntil(async () => (await numsub(env.redis, channelOf(client, name))) === 1, 2000, 2, 'the waiter to subscribe');
    controller.abort(new Error('caller gave up'));
    await expect(waiting).rejects.toThrow('caller gave up');
    await waitUntil(async () => (await numsub(env.redis, channelOf(client, name))) === 0, 2000, 5, 'the unsubscribe');
    expect(client.stats().subscriptions).toBe(0);
    await waitUntil(() => activeTimers() <= timers, 1000, 10, 'timers to be cleared');
    expect(client.stats().watchdogHolds).toBe(1);
  });

  it('acquire() with a wait time throws LockAcquireTimeoutError when the lock stays busy', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getLock(name).lock();
    const started = performance.now();
    const error = await client.getLock(name).acquire({ waitMs: 200 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquireTimeoutError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(195);
    // Ends at its wait time, not at the holder's TTL (30 s); the margin is for a stalled loop.
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('an acquisition that goes through after its caller gave up is released at once', async () => {
    const client = lockClient(env.redis, { responseTimeout: 5000 });
    const name = uniqueName();
    const controller = new AbortController();
    env.server.pause();
    try {
      const waiting = client.getLock(name).acquire({ signal: controller.signal });
      await sleep(100);
      controller.abort(new Error('gave up'));
      await expect(waiting).rejects.toThrow('gave up');
    } finally {
      env.server.resume();
    }
    await waitUntil(async () => !(await client.getLock(name).isLocked()), 3000, 10, 'the late acquisition to be undone');
    expect(client.stats().watchdogHolds).toBe(0);
  });

  it('a wait with no limit can be aborted, and 10,000 abandoned waits leave nothing behind (known failure 12)', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getLock(name).lock();
    const heapGrowth = await abandonWaits(client, 10_000, (signal) => client.getLock(name).acquire({ signal }));
    expect(heapGrowth).toBeLessThan(10 * 1024 * 1024); // a leak of 2.3 KB per wait would exceed it
  }, 60_000);

  it('100 waiters cost Redis work in proportion to releases, not to elapsed time (known failure 16)', async () => {
    const clients = Array.from({ length: 4 }, () => lockClient(env.redis));
    const name = uniqueName();
    const holder = clients[0]!.getLock(name);
    await holder.lock();
    const base = await commandCalls(env.redis, 'evalsha');
    const waiters = Array.from({ length: 100 }, (_, i) => {
      const lock = clients[i % 4]!.getLock(name);
      return lock.tryLock(30, 'seconds').then(async (ok) => {
        await sleep(1);
        await lock.unlock();
        return ok;
      });
    });
    await waitUntil(async () => (await numsub(env.redis, holder.channel)) === 4, 5000, 5, 'four subscriptions');
    const before = await callsSince(env.redis, 'evalsha', base, 200); // all 100 parked, not a 200 ms guess
    await sleep(1000);
    expect(await commandCalls(env.redis, 'evalsha')).toBe(before);
    await holder.unlock();
    expect((await Promise.all(waiters)).every(Boolean)).toBe(true);
    const perRelease = ((await commandCalls(env.redis, 'evalsha')) - before) / 101;
    expect(perRelease).toBeLessThan(8);
  });

  it('a waiter that leaves while Redis answers BUSY still unsubscribes once Redis is back (fault suite, redis-busy)', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const holder = client.getLock(name);
    await holder.lock();
    const abort = new AbortController();
    const waiting = client.getLock(name).acquire({ signal: abort.signal }).then(() => 'acquired', () => 'aborted');
    await waitUntil(async () => (await numsub(env.redis, holder.channel)) === 1, 2000, 5, 'the waiter to subscribe');
    await env.redis.configSet('busy-reply-threshold', '100');
    const busy = await connect(env.server.url);
    const script = busy.sendCommand(['EVAL', 'while true do end', '0']).catch(() => undefined);
    try {
      await sleep(300);
      abort.abort();
      expect(await waiting).toBe('aborted');
      await sleep(300); // its UNSUBSCRIBE is answered BUSY meanwhile
    } finally {
      await env.redis.sendCommand(['SCRIPT', 'KILL']).catch(() => undefined);
      await script;
      busy.destroy();
      await env.redis.configSet('busy-reply-threshold', '5000');
    }
    await waitUntil(async () => (await numsub(env.redis, holder.channel)) === 0, 3000, 20, 'the subscription to be dropped');
    expect(client.stats().subscriptions).toBe(0);
    await holder.unlock();
  });

  it('shutdown wakes a waiter with ClientClosedError', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getLock(name).lock();
    const waiting = client.getLock(name).tryLock(30, 'seconds');
    await waitUntil(async () => (await numsub(env.redis, channelOf(client, name))) === 1, 2000, 2, 'the waiter to subscribe');
    const outcome = expect(waiting).rejects.toBeInstanceOf(ClientClosedError);
    await client.shutdown();
    await outcome;
  });
});
