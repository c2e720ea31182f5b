/**
 * A call with a wait time is bounded by it (issue 17): with a default node-redis client, whose offline
 * queue holds commands while Redis is down, every primitive's call with a 1 s wait settles within the
 * wait plus 100 ms (not after the 3 s response timeout): with `RedisUnavailableError` when Redis answered
 * nothing during the wait, with "not acquired" when Redis went away while the call waited on a holder.
 * A real redis-server is killed. The bound applies only to a connection that is down: a slow reply on a
 * live one keeps the response timeout, so that the grant it carries is not thrown away.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RedisUnavailableError, type LockClient, type RLock } from '../src/index.js';
import { commandCalls, connect, lockClient, uniqueName, waitUntil, type Redis } from './support/helpers.js';
import { startRedis, type RedisServer } from './support/redis.js';
import { startProxy } from './support/tcp-proxy.js';

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
async function timed(call: Promise<unknown>): Promise<{ ms: number; lagMs: number; value?: unknown; error?: unknown }> {
  // The bound is relock's: on a loaded machine the event loop itself can run a timer late, and that lag
  // (measured over the call) is added to the slack.
  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const started = performance.now();
  const settled = (): { ms: number; lagMs: number } => {
    const ms = performance.now() - started;
    lag.disable();
    return { ms, lagMs: lag.max / 1e6 };
  };
  try {
    const value = await call;
    return { ...settled(), value };
  } catch (error) {
    return { ...settled(), error };
  }
}

describe('a call with a wait time is bounded by it', () => {
  let server: RedisServer;
  let redis: Redis;
  let client: LockClient;
  /** Resolves once the test's connection answers again after a restart. */
  const reachable = (): Promise<unknown> => waitUntil(() => redis.ping().then(() => true, () => false), 10_000, 20, 'Redis to be reachable again');

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
    await server.kill();
    try {
      const wrong: string[] = [];
      for (const [kind, call] of CALLS) {
        const outcome = await timed(call(client, `{${uniqueName()}}`));
        if (!(outcome.error instanceof RedisUnavailableError)) wrong.push(`${kind}: settled with ${String(outcome.error ?? outcome.value)}`);
        if (outcome.ms >= WAIT_MS + SLACK_MS + outcome.lagMs) wrong.push(`${kind}: settled after ${Math.round(outcome.ms)} ms (event-loop lag ${Math.round(outcome.lagMs)} ms)`);
      }
      expect(wrong).toEqual([]);
    } finally {
      await server.restart();
      await reachable();
    }
  });
  it('when Redis goes down while the call waits on a holder, it settles within the wait + 100 ms, not acquired', async () => {
    const holder = lockClient(redis);
    const scripts = async (): Promise<number> => (await commandCalls(redis, 'evalsha')) + (await commandCalls(redis, 'eval'));
    const cases: ReadonlyArray<[string, (c: LockClient, name: string) => RLock]> = [
      ['RLock', (c, n) => c.getLock(n)],
      ['RFairLock', (c, n) => c.getFairLock(n)],
      ['SpinLock', (c, n) => c.getSpinLock(n)],
    ];
    const wrong: string[] = [];
    for (const [kind, of] of cases) {
      const name = `{${uniqueName()}}`;
      await of(holder, name).acquire({ leaseTime: 10, unit: 'seconds' });
      const before = await scripts();
      const waiting = timed(of(client, name).tryLock(WAIT_MS, 'ms'));
      // Redis answered the first attempt (busy: a second one was sent); it goes away while the call waits.
      await waitUntil(async () => (await scripts()) - before >= 2, 2000, 5, 'a second attempt');
      await server.kill();
      const outcome = await waiting;
      if (outcome.value !== false) wrong.push(`${kind}: settled with ${String(outcome.error ?? outcome.value)}`);
      if (outcome.ms >= WAIT_MS + SLACK_MS + outcome.lagMs) wrong.push(`${kind}: settled after ${Math.round(outcome.ms)} ms (event-loop lag ${Math.round(outcome.lagMs)} ms)`);
      await server.restart();
      await reachable();
    }
    await holder.shutdown();
    expect(wrong).toEqual([]);
  });

  it('a slow reply on a live connection is not cut at the end of the wait: the grant it carries is kept', async () => {
    const proxy = await startProxy(server.host, server.port);
    const slow = await connect(`redis://${server.host}:${proxy.port}`);
    try {
      const c = lockClient(slow); // default responseTimeout (3 s)
      const lock = c.getFencedLock(`{${uniqueName()}}`);
      await c.getFencedLock(`{${uniqueName()}}`).lock(); // the script is loaded: one round trip per attempt
      proxy.latencyMs = 300; // each way: the reply comes ~600 ms after the send, well past the wait
      await c.runInContext(async () => {
        const outcome = await timed(lock.tryLockAndGetToken(100, 'ms'));
        proxy.latencyMs = 0;
        expect(outcome.error).toBeUndefined();
        expect(typeof outcome.value).toBe('bigint');
        expect(outcome.ms).toBeGreaterThan(500);
        expect(await lock.isHeldByCurrentContext()).toBe(true);
        await lock.unlock();
      });
      expect(await redis.exists(lock.key)).toBe(0);
      await c.shutdown();
    } finally {
      proxy.latencyMs = 0;
      slow.destroy();
      await proxy.close();
    }
  });
});
