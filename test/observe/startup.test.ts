/**
 * Metrics from a client's first operation (issue 35): a client made with a meter provider and used at
 * once, before `@opentelemetry/api` has finished loading, records every acquisition, hold, renewal and
 * loss, on node-redis and ioredis.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName } from '../support/helpers.js';
import { histogram, point, TestSdk } from './otel-support.js';

const env = useRedis();
const sdk = new TestSdk();
afterAll(() => sdk.close());

describe.each(['node-redis', 'ioredis'] as const)('metrics from the first operation (%s)', (client) => {
  it('a contended lock/unlock, a timed-out tryLock, a watchdog renewal and a loss right after createLockClient are all counted', async () => {
    let redis: object = env.redis;
    if (client === 'ioredis') {
      const io = new Redis(env.server.url, { lazyConnect: true });
      await io.connect();
      env.closeBeforeStop(() => io.quit());
      redis = io;
    }
    const name = uniqueName(`startup-${client}`);
    const before = await sdk.metrics();
    const relock = lockClient(redis, { otel: { meterProvider: sdk.meterProvider }, lockWatchdogTimeout: 300, responseTimeout: 100 });
    const kind = { 'relock.kind': 'lock' };
    const acquires = (outcome: string, m = before): number => point(m.get('relock.acquires'), { ...kind, 'relock.outcome': outcome }) ?? 0;
    // At once, in the same tick as createLockClient: the holder, a waiter that gets it after the unlock, a timed-out tryLock.
    const first = relock.getLock(name).acquire();
    const second = relock.getLock(name).acquire({ waitMs: 10_000 });
    const timedOut = relock.getLock(name).tryLock(0, 'ms');
    const held = await first;
    expect(await timedOut).toBe(false);
    // A watchdog renewal of the first hold (lease 300 ms, renewed every 100 ms).
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (relock.stats().renewalCalls > 0) {
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
    await held.release();
    const next = await second;
    // A loss: the hold's key deleted behind its back, found by the next renewal.
    const lost = new Promise((resolve) => relock.once('lockLost', resolve));
    await env.redis.del(name);
    await lost;
    expect(next.signal.aborted).toBe(true);

    const after = await sdk.metrics();
    expect([acquires('acquired', after) - acquires('acquired'), acquires('timeout', after) - acquires('timeout')]).toEqual([2, 1]);
    expect((histogram(after.get('relock.hold.duration'), kind)?.count ?? 0) - (histogram(before.get('relock.hold.duration'), kind)?.count ?? 0)).toBe(1);
    expect(point(after.get('relock.held'), kind) ?? 0).toBe(point(before.get('relock.held'), kind) ?? 0);
    expect((point(after.get('relock.lost'), { ...kind, 'relock.reason': 'expired' }) ?? 0) - (point(before.get('relock.lost'), { ...kind, 'relock.reason': 'expired' }) ?? 0)).toBe(1);
    expect(point(after.get('relock.watchdog.calls'), { 'relock.outcome': 'ok' }) ?? 0).toBeGreaterThan(point(before.get('relock.watchdog.calls'), { 'relock.outcome': 'ok' }) ?? 0);
    expect(point(after.get('relock.redis.requests'), { 'relock.request': 'lock.acquire' }) ?? 0).toBeGreaterThanOrEqual((point(before.get('relock.redis.requests'), { 'relock.request': 'lock.acquire' }) ?? 0) + 3);
  });
});
