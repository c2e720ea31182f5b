/**
 * A command Redis does not answer within `responseTimeout`: the call fails with `RedisUnavailableError`
 * whose message and cause say so, with the time waited (`ResponseTimeoutError`, src/redis/failures.ts).
 * Redis is made silent with `CLIENT PAUSE … ALL`, which holds every client's commands until it ends.
 */
import { describe, expect, it } from '@jest/globals';
import { RedisUnavailableError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis();

describe('response timeout', () => {
  it('a command with no reply within responseTimeout fails with "no reply from Redis within <ms waited> ms"', async () => {
    const lock = lockClient(env.redis, { responseTimeout: 200, retry: { retries: 0 } }).getLock(uniqueName('silent'));
    await lock.isLocked(); // connected and the scripts' client ready before the pause
    await env.redis.sendCommand(['CLIENT', 'PAUSE', '1500', 'ALL']);
    const failure = await lock.tryLock().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RedisUnavailableError);
    // The time waited: the response timeout, or a little more on a busy machine.
    expect((failure as Error).message).toMatch(/: no reply from Redis within \d+ ms$/);
    let cause = (failure as Error).cause as Error | undefined;
    while (cause?.cause instanceof Error) cause = cause.cause;
    expect(cause).toMatchObject({ name: 'ResponseTimeoutError', message: expect.stringMatching(/^no reply from Redis within \d+ ms$/) });
    // At least the response timeout, and less than the pause: Redis answers when the 1,500 ms pause ends,
    // so a call given up for want of a reply was given up before that.
    const waited = Number(/(\d+) ms$/.exec(cause!.message)![1]);
    expect(waited).toBeGreaterThanOrEqual(200);
    expect(waited).toBeLessThan(1500);
    await waitUntil(() => lock.isLocked().then(() => true, () => false), 10_000, 50, 'the pause to end');
    await lock.forceUnlock(); // the acquire may still have run once the pause ended
  });
});
