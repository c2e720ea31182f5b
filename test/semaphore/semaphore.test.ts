import { describe, expect, it } from '@jest/globals';
import { InvalidArgumentError, PermitAcquireTimeoutError, WrongTypeError } from '../../src/index.js';
import { keySlot } from '../../src/keys.js';
import { useRedis } from '../support/harness.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';
import { expectWokenByMessage, recordAcquisitions } from '../support/wakes.js';
import { activeTimers, callsSince, commandCalls, lockClient, sleep, subscribers, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis({ server: { controllable: true } });

describe('RSemaphore', () => {
  it('keeps the free count in a string; trySetPermits, tryAcquire, release, addPermits, drainPermits', async () => {
    const semaphore = lockClient(env.redis).getSemaphore(uniqueName());
    expect(await semaphore.availablePermits()).toBe(0);
    expect(await semaphore.tryAcquire()).toBe(false);
    expect(await semaphore.trySetPermits(3)).toBe(true);
    expect(await semaphore.trySetPermits(5)).toBe(false);
    expect(await env.redis.get(semaphore.key)).toBe('3');
    expect(await semaphore.tryAcquire(2)).toBe(true);
    expect(await semaphore.tryAcquire(2)).toBe(false);
    expect(await semaphore.tryAcquire()).toBe(true);
    expect(await semaphore.availablePermits()).toBe(0);
    await semaphore.release(2);
    expect(await semaphore.availablePermits()).toBe(2);
    await semaphore.addPermits(-3);
    expect(await semaphore.availablePermits()).toBe(-1);
    await semaphore.addPermits(4);
    expect(await semaphore.drainPermits()).toBe(3);
    expect(await semaphore.availablePermits()).toBe(0);
    expect(await lockClient(env.redis).getSemaphore(uniqueName()).drainPermits()).toBe(0);
    expect(keySlot(semaphore.channel)).toBe(keySlot(semaphore.key));
    expect(semaphore.channel).toBe(`relock:channel:{${semaphore.name}}:permits`);
  });

  it('tryAcquire with no wait time makes exactly one attempt (known failure 13)', async () => {
    const semaphore = lockClient(env.redis).getSemaphore(uniqueName());
    await semaphore.trySetPermits(1);
    expect(await semaphore.tryAcquire(2)).toBe(false);
    const before = await commandCalls(env.redis, 'evalsha');
    expect(await semaphore.tryAcquire(2)).toBe(false);
    expect(await semaphore.tryAcquire(2, 0, 's')).toBe(false);
    expect((await commandCalls(env.redis, 'evalsha')) - before).toBe(2);
  });

  it('a waiter for 2 is woken when the second permit is released, within milliseconds, and not by the first (known failure 20)', async () => {
    const semaphore = lockClient(env.redis).getSemaphore(uniqueName());
    await semaphore.trySetPermits(0);
    const waiter = lockClient(env.redis).getSemaphore(semaphore.name);
    const acquisitions = recordAcquisitions();
    const base = await commandCalls(env.redis, 'evalsha');
    const waiting = waiter.tryAcquire(2, 10, 'seconds').finally(() => acquisitions.stop());
    await subscribers(env.redis, semaphore.channel);
    const calls = await callsSince(env.redis, 'evalsha', base, 2); // parked: its attempt after subscribing is in, not a 20 ms guess
    await semaphore.release();
    await sleep(200);
    expect((await commandCalls(env.redis, 'evalsha')) - calls).toBe(1);
    const started = performance.now();
    await semaphore.release();
    expect(await waiting).toBe(true);
    expectWokenByMessage(acquisitions, semaphore.name, performance.now() - started);
    expect(await semaphore.availablePermits()).toBe(0);
  });

  it('a waiter for 2 is not overtaken by later one-permit waiters of the same process', async () => {
    const semaphore = lockClient(env.redis).getSemaphore(uniqueName());
    await semaphore.trySetPermits(0);
    const order: string[] = [];
    const big = semaphore.acquire(2).then(() => order.push('two'));
    await subscribers(env.redis, semaphore.channel);
    await sleep(20);
    const small = semaphore.acquire().then(() => order.push('one'));
    await sleep(20);
    await semaphore.release();
    await sleep(100);
    expect(order).toEqual([]);
    await semaphore.release();
    await big;
    await semaphore.release();
    await small;
    expect(order).toEqual(['two', 'one']);
  });

  it('still acquires when a count change publishes nothing: the fallback timer of lockWatchdogTimeout fires', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 500 });
    // The parked waiter's fallback timer fires 500 ms after it parked (recorded: woken by the timer),
    // against a bound of 1,500 ms: a round that failed while this process's loop or Redis stalled past 400
    // ms (stallTolerant with probeReplies) is repeated, up to 3 rounds, on a fresh name, its permit
    // released; a waiter that does not poll at lockWatchdogTimeout waits out its 5 s, every round.
    await stallTolerant(async (_, slowReply) => {
      const semaphore = client.getSemaphore(uniqueName());
      await semaphore.trySetPermits(0);
      const acquisitions = recordAcquisitions();
      const stop = probeReplies(env.redis, slowReply);
      let acquired = false;
      try {
        const base = await commandCalls(env.redis, 'evalsha');
        const started = performance.now();
        const waiting = semaphore.tryAcquire(1, 5, 'seconds');
        await subscribers(env.redis, semaphore.channel);
        await callsSince(env.redis, 'evalsha', base, 2); // parked: its attempt after subscribing ran
        await env.redis.incr(semaphore.key);
        acquired = await waiting;
        const took = performance.now() - started;
        stop();
        expect({ tookMs: took < 1500 ? '< 1500' : Math.round(took), calls: acquisitions.of(semaphore.name) }).toEqual({ tookMs: '< 1500', calls: [{ outcome: 'acquired', wokenBy: 'timer' }] });
      } finally {
        stop();
        acquisitions.stop();
        if (acquired) await semaphore.release();
      }
    }, 400);
  });

  it('acquire() with a wait time throws PermitAcquireTimeoutError; an aborted wait leaves no subscription or timer', async () => {
    const client = lockClient(env.redis);
    const semaphore = client.getSemaphore(uniqueName());
    const error = await semaphore.acquire({ permits: 2, waitMs: 150 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermitAcquireTimeoutError);
    expect((error as PermitAcquireTimeoutError).permits).toBe(2);
    const timers = activeTimers();
    const controller = new AbortController();
    const waiting = semaphore.acquire({ signal: controller.signal });
    await subscribers(env.redis, semaphore.channel);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    await subscribers(env.redis, semaphore.channel, 0);
    expect(client.stats().subscriptions).toBe(0);
    await waitUntil(() => activeTimers() <= timers, 1000, 10, 'timers to be cleared');
    expect(await semaphore.availablePermits()).toBe(0);
  });

  it('100 waiters in 4 clients cost Redis work in proportion to releases, not to elapsed time (known failure 16)', async () => {
    const clients = Array.from({ length: 4 }, () => lockClient(env.redis));
    const name = uniqueName();
    const base = await commandCalls(env.redis, 'evalsha');
    const waiters = Array.from({ length: 100 }, async (_, i) => {
      const semaphore = clients[i % 4]!.getSemaphore(name);
      const ok = await semaphore.tryAcquire(1, 30, 'seconds');
      await sleep(1);
      await semaphore.release();
      return ok;
    });
    await subscribers(env.redis, clients[0]!.getSemaphore(name).channel, 4);
    const before = await callsSince(env.redis, 'evalsha', base, 200); // all 100 parked, not a 200 ms guess
    await sleep(1000);
    expect(await commandCalls(env.redis, 'evalsha')).toBe(before);
    await clients[0]!.getSemaphore(name).release();
    expect((await Promise.all(waiters)).every(Boolean)).toBe(true);
    const perRelease = ((await commandCalls(env.redis, 'evalsha')) - before) / 101;
    expect(perRelease).toBeLessThan(8);
  });

  it('release and acquire whose replies are lost are retried without counting twice (request latch)', async () => {
    const client = lockClient(env.redis, { responseTimeout: 150, retry: { minTimeout: 50, maxTimeout: 200, retries: 6 } });
    const semaphore = client.getSemaphore(uniqueName());
    await semaphore.trySetPermits(5);
    for (const [call, expected] of [[() => semaphore.release(2), 7], [() => semaphore.acquire(3), 4]] as const) {
      const calls = await commandCalls(env.redis, 'evalsha');
      env.server.pause();
      let running: Promise<void>;
      try {
        running = call();
        await sleep(400);
      } finally {
        env.server.resume();
      }
      await running;
      expect(await commandCalls(env.redis, 'evalsha')).toBeGreaterThanOrEqual(calls + 2);
      expect(await semaphore.availablePermits()).toBe(expected);
    }
  });

  it('a key that holds other data fails with WrongTypeError; bad arguments with InvalidArgumentError before anything is sent', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await env.redis.hSet(name, 'f', 'v');
    const error = await client.getSemaphore(name).tryAcquire().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WrongTypeError);
    expect((error as WrongTypeError).actualType).toBe('hash');
    await expect(client.getSemaphore(name).availablePermits()).rejects.toBeInstanceOf(WrongTypeError);

    const semaphore = client.getSemaphore(uniqueName());
    const before = await commandCalls(env.redis, 'evalsha');
    await expect(semaphore.tryAcquire(-1)).rejects.toThrow(InvalidArgumentError);
    await expect(semaphore.acquire(-1)).rejects.toThrow(/permits/);
    await expect(semaphore.release(1.5)).rejects.toThrow(/permits/);
    await expect(semaphore.tryAcquire(1, 5, undefined as unknown as 's')).rejects.toThrow(/unit/);
    await expect(semaphore.trySetPermits(-1)).rejects.toThrow(/permits/);
    await expect(semaphore.addPermits(Number.NaN)).rejects.toThrow(/permits/);
    await expect(semaphore.tryAcquire(1, Number.NaN, 's')).rejects.toThrow(/waitTime/);
    expect(await commandCalls(env.redis, 'evalsha')).toBe(before);
  });

  it('zero permits are a no-op, as in Redisson and Java (issue 20, defect 5): tryAcquire(0) is true, acquire(0) and release(0) resolve, nothing sent', async () => {
    const client = lockClient(env.redis);
    const semaphore = client.getSemaphore(uniqueName());
    const before = await commandCalls(env.redis, 'evalsha');
    expect(await semaphore.tryAcquire(0)).toBe(true);
    expect(await semaphore.tryAcquire(0, 1, 's')).toBe(true);
    await semaphore.acquire(0);
    await semaphore.acquire({ permits: 0 });
    await semaphore.release(0);
    expect(await commandCalls(env.redis, 'evalsha')).toBe(before);
    expect(await semaphore.availablePermits()).toBe(0);
    expect(await env.redis.exists(semaphore.key)).toBe(0);
  });
});
