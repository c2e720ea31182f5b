import { describe, expect, it } from '@jest/globals';
import { ClientClosedError, InvalidArgumentError, WrongTypeError } from '../../src/index.js';
import { keySlot } from '../../src/keys.js';
import { useRedis } from '../support/harness.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';
import { activeTimers, commandCalls, keys, lockClient, sleep, subscribers, uniqueName, waitUntil, Worker } from '../support/helpers.js';

const env = useRedis({ server: { controllable: true } });

const hrNow = (): number => Number(process.hrtime.bigint()) / 1e6;

describe('RCountDownLatch', () => {
  it('trySetCount, countDown and getCount; at zero the key is deleted and the latch can be set again', async () => {
    const latch = lockClient(env.redis).getCountDownLatch(uniqueName());
    expect(await latch.getCount()).toBe(0);
    expect(await latch.countDown()).toBe(0);
    expect(await env.redis.exists(latch.key)).toBe(0);
    expect(await latch.trySetCount(2)).toBe(true);
    expect(await latch.trySetCount(5)).toBe(false);
    expect(await env.redis.hGetAll(latch.key)).toEqual({ kind: 'count-down-latch', count: '2' });
    expect(await latch.countDown()).toBe(1);
    expect(await latch.getCount()).toBe(1);
    expect(await latch.countDown()).toBe(0);
    expect(await env.redis.exists(latch.key)).toBe(0);
    expect(await latch.trySetCount(1)).toBe(true);
    expect(keySlot(latch.channel)).toBe(keySlot(latch.key));
    expect(latch.channel).toBe(`relock:channel:{${latch.name}}:latch`);
  });

  it('countDown on an open latch writes nothing and publishes nothing (no request latch, no zero message)', async () => {
    const latch = lockClient(env.redis).getCountDownLatch(uniqueName());
    const publishes = await commandCalls(env.redis, 'publish');
    expect(await latch.countDown()).toBe(0);
    expect(await keys(env.redis, `*{${latch.name}}*`)).toEqual([]);
    expect(await commandCalls(env.redis, 'publish')).toBe(publishes);
  });

  it('await resolves for every local awaiter within milliseconds of the count reaching zero, with one message', async () => {
    const client = lockClient(env.redis);
    // The awaiters wake by one message, against a bound of 200 ms: a round that failed while this process's
    // loop or Redis stalled past 150 ms (stallTolerant with probeReplies) is repeated, up to 3 rounds, on a
    // fresh latch (the failed one is at zero: nothing left behind); without the message the awaiters sleep to
    // the end of their 10 s wait, every round.
    await stallTolerant(async (_, slowReply) => {
      const latch = client.getCountDownLatch(uniqueName());
      await latch.trySetCount(2);
      const awaiters = Array.from({ length: 50 }, () => client.getCountDownLatch(latch.name).await(10, 'seconds'));
      let stop = (): void => undefined;
      try {
        await subscribers(env.redis, latch.channel);
        await latch.countDown();
        await sleep(50);
        stop = probeReplies(env.redis, slowReply);
        const started = performance.now();
        await latch.countDown();
        expect(await Promise.all(awaiters)).toEqual(Array(50).fill(true));
        const took = performance.now() - started;
        stop();
        expect(took).toBeLessThan(200);
      } finally {
        stop();
        await Promise.allSettled(awaiters);
      }
      await waitUntil(() => client.stats().subscriptions === 0, 2000, 5, 'the channel to be left');
    }, 150);
  });

  it('await(waitTime) resolves to false when the time runs out, true at once on an open latch; await() without limit can be aborted', async () => {
    const client = lockClient(env.redis);
    const latch = client.getCountDownLatch(uniqueName());
    expect(await latch.await(0, 'ms')).toBe(true);
    // The await times out at its 200 ms, against a bound of 700 ms: a round that failed while this
    // process's loop or Redis stalled past 400 ms (stallTolerant with probeReplies) is repeated, up to 3
    // rounds, on a fresh latch (opened in `finally`); a wait that sleeps past the time left fails every round.
    await stallTolerant(async (_, slowReply) => {
      const timed = client.getCountDownLatch(uniqueName());
      await timed.trySetCount(1);
      const stop = probeReplies(env.redis, slowReply);
      try {
        const started = performance.now();
        expect(await timed.await(200, 'ms')).toBe(false);
        const took = performance.now() - started;
        stop();
        expect(took).toBeGreaterThanOrEqual(195);
        expect(took).toBeLessThan(700);
      } finally {
        stop();
        await timed.countDown();
      }
    }, 400);
    await latch.trySetCount(1);
    const timers = activeTimers();
    const controller = new AbortController();
    const waiting = latch.await({ signal: controller.signal });
    await subscribers(env.redis, latch.channel);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    await subscribers(env.redis, latch.channel, 0);
    await waitUntil(() => activeTimers() <= timers, 1000, 10, 'timers to be cleared');
    const opened = latch.await();
    await latch.countDown();
    await expect(opened).resolves.toBeUndefined();
  });

  it('awaiters in 3 processes are all released when the count reaches zero', async () => {
    // Each awaiter is released by the zero message within ms, against a bound of 300 ms: a round that
    // failed while this process's loop or Redis stalled past 200 ms (stallTolerant with probeReplies) is
    // repeated, up to 3 rounds, on a fresh latch with fresh workers (a failed round's latch is at zero, its
    // workers stopped by the harness); without the message the awaiters sleep to their 20 s deadline.
    await stallTolerant(async (_, slowReply) => {
      const latch = lockClient(env.redis).getCountDownLatch(uniqueName());
      await latch.trySetCount(3);
      const procs = await Promise.all(Array.from({ length: 3 }, async () => {
        const w = new Worker('semaphore-worker', { url: env.server.url });
        env.workers.push(w);
        await w.next('ready', 60_000);
        return w;
      }));
      let stop = (): void => undefined;
      try {
        for (const w of procs) w.send({ cmd: 'await', name: latch.name, waitMs: 20_000 });
        await subscribers(env.redis, latch.channel, 3, 20_000);
        procs[0]!.send({ cmd: 'countDown', name: latch.name });
        expect((await procs[0]!.next('counted')).count).toBe(2);
        await latch.countDown();
        await sleep(100);
        stop = probeReplies(env.redis, slowReply);
        const lastAt = hrNow();
        await latch.countDown();
        const opened = await Promise.all(procs.map((w) => w.next('opened')));
        stop();
        for (const o of opened) {
          expect(o.ok).toBe(true);
          expect(Number(o.at) - lastAt).toBeLessThan(300);
        }
      } finally {
        stop();
      }
      await subscribers(env.redis, latch.channel, 0);
    }, 200);
  }, 120_000);

  it('a countDown whose reply is lost is retried without counting down twice (request latch)', async () => {
    const client = lockClient(env.redis, { responseTimeout: 150, retry: { minTimeout: 50, maxTimeout: 200, retries: 6 } });
    const latch = client.getCountDownLatch(uniqueName());
    await latch.trySetCount(3);
    const calls = await commandCalls(env.redis, 'evalsha');
    env.server.pause();
    let counting: Promise<number>;
    try {
      counting = latch.countDown();
      await sleep(400);
    } finally {
      env.server.resume();
    }
    expect(await counting).toBe(2);
    expect(await commandCalls(env.redis, 'evalsha')).toBeGreaterThanOrEqual(calls + 2);
    expect(await latch.getCount()).toBe(2);
  });

  it('shutdown wakes an awaiter with ClientClosedError; bad arguments and other data fail with typed errors', async () => {
    const client = lockClient(env.redis);
    const latch = client.getCountDownLatch(uniqueName());
    await latch.trySetCount(1);
    const waiting = latch.await(30, 'seconds');
    await subscribers(env.redis, latch.channel);
    const outcome = expect(waiting).rejects.toBeInstanceOf(ClientClosedError);
    await client.shutdown();
    await outcome;

    const other = lockClient(env.redis);
    await expect(other.getCountDownLatch(latch.name).trySetCount(0)).rejects.toThrow(InvalidArgumentError);
    await expect(other.getCountDownLatch(latch.name).trySetCount(2.5)).rejects.toThrow(/count/);
    await expect(other.getCountDownLatch(latch.name).await(5 as number, undefined as unknown as 's')).rejects.toThrow(/unit/);
    const name = uniqueName();
    await env.redis.rPush(name, 'x');
    await expect(other.getCountDownLatch(name).countDown()).rejects.toBeInstanceOf(WrongTypeError);
    await expect(other.getCountDownLatch(name).await(1, 's')).rejects.toThrow(/holds a Redis list/);
  });
});

describe('latch after a reconnect', () => {
  it('every awaiter wakes when the zero message was lost while the subscriber was away', async () => {
    const client = lockClient(env.redis);
    const latch = client.getCountDownLatch(uniqueName());
    await latch.trySetCount(1);
    const awaiters = Array.from({ length: 5 }, () => client.getCountDownLatch(latch.name).await(20, 'seconds'));
    await subscribers(env.redis, latch.channel, 1);
    await env.redis.del(latch.key); // the count reaches zero without a message
    const started = performance.now();
    await env.redis.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub']);
    expect(await Promise.all(awaiters)).toEqual([true, true, true, true, true]);
    expect(performance.now() - started).toBeLessThan(3000);
  });
});
