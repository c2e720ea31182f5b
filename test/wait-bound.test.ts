/**
 * A call with a wait time is bounded by it (issue 17): with a default node-redis client, whose offline
 * queue holds commands while Redis is down, every primitive's call with a 1 s wait settles within the
 * wait plus 100 ms (not after the 3 s response timeout): with `RedisUnavailableError` when Redis answered
 * nothing during the wait, with "not acquired" when Redis went away while the call waited on a holder.
 * A real redis-server is stopped.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RedisUnavailableError, type LockClient } from '../src/index.js';
import { connect, lockClient, uniqueName, type Redis } from './support/helpers.js';
import { startRedis, type RedisServer } from './support/redis.js';

const WAIT_MS = 1000;
const SLACK_MS = 100;

/** Every call with a wait time, one per primitive, each on a name of its own; resolves to what it got. */
const CALLS: ReadonlyArray<[string, (c: LockClient, name: string) => Promise<unknown>]> = [
  ['RLock', (c, n) => c.getLock(n).tryLock(WAIT_MS, 'ms')],
  ['FencedLock', (c, n) => c.getFencedLock(n).tryLock(WAIT_MS, 'ms')],
  ['RFairLock', (c, n) => c.getFairLock(n).tryLock(WAIT_MS, 'ms')],
  ['SpinLock', (c, n) => c.getSpinLock(n).tryLock(WAIT_MS, 'ms')],
  ['RReadLock', (c, n) => c.getReadWriteLock(n).readLock().tryLock(WAIT_MS, 'ms')],
  ['RWriteLock', (c, n) => c.getReadWriteLock(n).writeLock().tryLock(WAIT_MS, 'ms')],
  ['RSemaphore', (c, n) => c.getSemaphore(n).tryAcquire(WAIT_MS, 'ms')],
  ['RPermitExpirableSemaphore', (c, n) => c.getPermitExpirableSemaphore(n).tryAcquire(WAIT_MS, 'ms')],
  ['RCountDownLatch', (c, n) => c.getCountDownLatch(n).await(WAIT_MS, 'ms')],
];

/** How long `call` takes to settle, and how. */
async function timed(call: Promise<unknown>): Promise<{ ms: number; value?: unknown; error?: unknown }> {
  const started = performance.now();
  try {
    const value = await call;
    return { ms: performance.now() - started, value };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

describe('a call with a wait time is bounded by it', () => {
  let server: RedisServer;
  let redis: Redis;
  let client: LockClient;

  beforeAll(async () => {
    server = await startRedis({ controllable: true });
    redis = await connect(server.url); // node-redis defaults: offline queue on
    client = lockClient(redis); // default responseTimeout (3 s) and retry policy
  });
  afterAll(async () => {
    await client.shutdown();
    redis.destroy();
    await server.stop();
  });

  it('while Redis is down, every primitive settles within the wait + 100 ms, with RedisUnavailableError', async () => {
    await server.stop();
    try {
      const wrong: string[] = [];
      for (const [kind, call] of CALLS) {
        const outcome = await timed(call(client, `{${uniqueName()}}`));
        if (!(outcome.error instanceof RedisUnavailableError)) wrong.push(`${kind}: settled with ${String(outcome.error ?? outcome.value)}`);
        if (outcome.ms >= WAIT_MS + SLACK_MS) wrong.push(`${kind}: settled after ${Math.round(outcome.ms)} ms`);
      }
      expect(wrong).toEqual([]);
    } finally {
      await server.restart();
    }
  });
});
