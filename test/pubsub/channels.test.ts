/**
 * The waiting layer on a real Redis, below the primitives: a channel lingers after its last waiter (one
 * SUBSCRIBE for a lock contended again and again), a message that comes while a waiter makes its first
 * attempt on a lingering channel is not lost, and the waiters of one channel share one fallback timer that
 * still resumes each of them at its own time when no message comes.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import pino from 'pino';
import { Channels, LINGER_MS } from '../../src/pubsub/channels.js';
import { waitFor } from '../../src/pubsub/wait.js';
import { openConnection } from '../../src/redis/clients/index.js';
import type { Connection } from '../../src/redis/connection.js';
import { useRedis } from '../support/harness.js';
import { activeTimers, commandCalls, numsub, uniqueName, waitUntil } from '../support/helpers.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';

const env = useRedis();
const one = (): number => 1;
/** Answers of a wait that ends only when a message woke it: busy before and after subscribing, then granted. */
const WOKEN: Array<number | true> = [10_000, 10_000, true];

let opened: Array<{ connection: Connection; channels: Channels }> = [];
afterEach(async () => {
  for (const { connection, channels } of opened.splice(0)) {
    await channels.close();
    await connection.close();
  }
});

function layer(): { connection: Connection; channels: Channels } {
  const connection = openConnection({ redis: env.redis, onError: () => {} });
  const made = { connection, channels: new Channels(connection, pino({ level: 'silent' })) };
  opened.push(made);
  return made;
}

/** A wait on `channel` whose attempts answer `answers` in turn (the last one repeats), each a retry time or true for acquired. */
function wait(channels: Channels, channel: string, answers: Array<number | true>, waitMs = 5000, onAttempt?: (n: number) => Promise<void>) {
  let n = 0;
  return waitFor<string>({
    channels,
    channel,
    rule: one,
    waitMs,
    subscriptionTimeoutMs: 2000,
    maxPollMs: 10_000,
    attempt: async () => {
      const answer = answers[Math.min(n, answers.length - 1)]!;
      await onAttempt?.(n);
      n++;
      return answer === true ? { acquired: true, value: 'got it' } : { acquired: false, retryAfterMs: answer };
    },
  });
}

describe('channels', () => {
  it('a channel lingers after its last waiter: waits within the linger pay one SUBSCRIBE in all, and it is unsubscribed after', async () => {
    const { channels } = layer();
    const channel = uniqueName();
    const subscribes = await commandCalls(env.redis, 'subscribe');
    for (let i = 0; i < 10; i++) {
      // The first wait subscribes and tries again; the later ones find the channel lingering and, with no
      // wake-up dropped meanwhile, park on their first answer: each ends by its message.
      const waiting = wait(channels, channel, i === 0 ? WOKEN : [10_000, true]);
      await waitUntil(() => channels.size === 1, 2000, 1, 'the waiter to join');
      await waitUntil(async () => (await env.redis.publish(channel, '0')) === 1, 2000, 2, 'the message to be delivered');
      expect(await waiting).toBe('got it');
      expect(channels.size).toBe(0);
      expect(channels.lingeringCount).toBe(1);
    }
    expect((await commandCalls(env.redis, 'subscribe')) - subscribes).toBe(1);
    const left = performance.now();
    await waitUntil(async () => (await numsub(env.redis, channel)) === 0, 2000, 5, 'the unsubscribe after the linger');
    expect(performance.now() - left).toBeGreaterThanOrEqual(LINGER_MS - 20);
    expect(channels.lingeringCount).toBe(0);
  });

  it('closing ends the linger at once: no subscription is left when close() resolves', async () => {
    const { channels } = layer();
    const channel = uniqueName();
    const waiting = wait(channels, channel, WOKEN);
    await waitUntil(async () => (await env.redis.publish(channel, '0')) === 1, 2000, 2, 'the waiter to subscribe');
    expect(await waiting).toBe('got it');
    expect(channels.lingeringCount).toBe(1);
    const timers = activeTimers();
    await channels.close();
    expect(await numsub(env.redis, channel)).toBe(0);
    expect(channels.lingeringCount).toBe(0);
    expect(activeTimers()).toBeLessThanOrEqual(timers);
  });

  it('a message that comes during the first attempt on a lingering channel is not lost: the waiter tries again at once', async () => {
    // The waiter tries again within ms of its first attempt, against a bound of 1,000 ms: a round that
    // failed while this process's loop or Redis stalled past 400 ms (stallTolerant with probeReplies) is
    // repeated, up to 3 rounds, on a fresh channel and connection; a waiter that does not see the dropped
    // message sleeps to the end of its 5 s wait, every round.
    await stallTolerant(async (_, slowReply) => {
      const { channels } = layer();
      const channel = uniqueName();
      const warm = wait(channels, channel, WOKEN);
      await waitUntil(async () => (await env.redis.publish(channel, '0')) === 1, 2000, 2, 'the waiter to subscribe');
      await warm;
      expect(channels.lingeringCount).toBe(1);
      const stop = probeReplies(env.redis, slowReply);
      try {
        // The release comes after the first attempt read the lock as busy (retry in 10 s), before the waiter joined.
        const started = performance.now();
        const live = channels.live(channel)!;
        const waiting = wait(channels, channel, [10_000, true], 5000, async (n) => {
          if (n > 0) return;
          const before = live.dropped;
          await env.redis.publish(channel, '0');
          await waitUntil(() => live.dropped > before, 2000, 1, 'the message to arrive (and be dropped: nobody joined yet)');
        });
        expect(await waiting).toBe('got it');
        const took = performance.now() - started;
        stop();
        expect(took).toBeLessThan(1000);
      } finally {
        stop();
      }
    }, 400);
  });

  it('a waiter woken by a message that gives up before its attempt runs passes the wake-up on: the next waiter tries at once (issue 28)', async () => {
    // The second waiter tries within ms of the message, against a bound of 1,000 ms: a round that failed
    // while this process's loop or Redis stalled past 400 ms (stallTolerant with probeReplies) is repeated,
    // up to 3 rounds, on a fresh channel and connection; a wake-up not passed on leaves the second waiter
    // to its 10 s fallback, every round.
    await stallTolerant(async (_, slowReply) => {
      const { channels } = layer();
      const channel = uniqueName();
      const warm = wait(channels, channel, WOKEN);
      await waitUntil(async () => (await env.redis.publish(channel, '0')) === 1, 2000, 2, 'the channel to be subscribed');
      await warm;
      // On the lingering channel each waiter parks after its first attempt; the first one's next attempt
      // (after the message) is given up before it runs: its signal aborts, as a caller's would meanwhile.
      const controller = new AbortController();
      let firstAttempts = 0;
      const first = waitFor<string>({
        channels,
        channel,
        rule: one,
        waitMs: 20_000,
        subscriptionTimeoutMs: 2000,
        maxPollMs: 10_000,
        signal: controller.signal,
        attempt: async () => {
          if (++firstAttempts === 1) return { acquired: false, retryAfterMs: 10_000 };
          controller.abort(new Error('gave up'));
          throw controller.signal.reason;
        },
      }).catch((error: unknown) => error);
      await waitUntil(() => firstAttempts === 1, 2000, 1, 'the first waiter to park');
      let secondAttempts = 0;
      const second = wait(channels, channel, [10_000, true], 20_000, async () => void secondAttempts++);
      await waitUntil(() => secondAttempts === 1, 2000, 1, 'the second waiter to park');
      await new Promise((resolve) => setImmediate(resolve));
      const stop = probeReplies(env.redis, slowReply);
      try {
        const published = performance.now();
        await env.redis.publish(channel, '0'); // one message: it wakes the first waiter only
        expect(await first).toEqual(new Error('gave up'));
        expect(await second).toBe('got it');
        const took = performance.now() - published;
        stop();
        // Its own fallback would have come after 10 s.
        expect(took).toBeLessThan(1000);
      } finally {
        stop();
      }
    }, 400);
  });

  it('waiters share one fallback timer, which resumes each at its own retry time when no message comes', async () => {
    const { channels } = layer();
    // Each waiter resumes at its due time, against a bound 150 ms later: a round that failed while this
    // process's event loop stalled past 100 ms (stallTolerant; the timers are this process's, the channel is
    // subscribed before the timed part) is repeated, up to 3 rounds, on a fresh channel; a waiter that does
    // not resume at its own retry time waits to the end of its 5 s wait every round.
    await stallTolerant(async () => {
      const channel = uniqueName();
      const warm = wait(channels, channel, WOKEN);
      await waitUntil(async () => (await env.redis.publish(channel, '0')) === 1, 2000, 2, 'the channel to be subscribed');
      await warm;
      const timers = activeTimers();
      const started = performance.now();
      const at = (ms: number) => wait(channels, channel, [ms, true]).then((value) => ({ value, after: performance.now() - started }));
      const waits = [at(300), at(100), at(200)];
      try {
        await waitUntil(() => channels.size === 1, 1000, 1, 'the waiters to join');
        await new Promise((resolve) => setImmediate(resolve));
        expect(activeTimers() - timers).toBe(1);
        const [slow, fast, middle] = await Promise.all(waits);
        for (const [result, due] of [[fast, 100], [middle, 200], [slow, 300]] as const) {
          expect(result.value).toBe('got it');
          expect(result.after).toBeGreaterThanOrEqual(due - 2);
          expect(result.after).toBeLessThan(due + 150);
        }
      } finally {
        // A failed round's waiters end (each within its 5 s wait) before the next round joins.
        await Promise.allSettled(waits);
      }
    }, 100);
  });
});
