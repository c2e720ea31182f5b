/**
 * An expirable-permit acquire whose first attempt failed without running (its connection reset before the
 * request reached Redis, through the TCP proxy of test/support) is retried; the retry must take the
 * permits as any first attempt would, never believe that the first attempt had taken them. Its acquire
 * script tells the two apart by the first id (`retry == '1' and zscore(first id)`): without that check
 * the retry "renews" ids that do not exist (ZADD XX adds nothing) and hands them out, so Redis counts one
 * permit fewer than are held (N + 1 holders).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PermitAcquireTimeoutError } from '../../src/index.js';
import { ACQUIRE } from '../../src/permit-expirable-semaphore/scripts.js';
import { useRedis } from '../support/harness.js';
import { closeAll, connect, lockClient, uniqueName, type Redis } from '../support/helpers.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';

const env = useRedis();
let proxy: TcpProxy;
let through: Redis;
beforeAll(async () => {
  proxy = await startProxy('127.0.0.1', env.server.port);
  through = await connect(`redis://127.0.0.1:${proxy.port}`);
});
afterAll(async () => {
  await closeAll(); // the lock clients first, then their connection
  through.destroy();
  await proxy.close();
});

/** A lock client whose commands go through the proxy, with quick retries. */
const proxied = () => lockClient(through, { retry: { minTimeout: 20, maxTimeout: 100, retries: 10 } });

describe('an expirable-permit acquire whose first attempt failed without running (issue 28)', () => {
  it.each([
    ['a lease', 30_000],
    ['the watchdog', undefined],
  ] as const)('with %s: the retry takes the permits, and every id it hands out is in Redis', async (_, leaseMs) => {
    const semaphore = proxied().getPermitExpirableSemaphore(uniqueName());
    await semaphore.setPermits(3);
    const refused = proxy.refuseRequest(ACQUIRE.sha);
    try {
      const handle = await semaphore.acquire({ permits: 2, waitMs: 5000, ...(leaseMs === undefined ? {} : { leaseMs }) });
      await refused;
      for (const id of handle.ids) expect({ id, score: await env.redis.zScore(semaphore.key, id) }).toEqual({ id, score: expect.any(Number) });
      expect(await env.redis.zCard(semaphore.key)).toBe(2);
      expect(await semaphore.availablePermits()).toBe(1);
      await handle.release();
    } finally {
      proxy.disarm();
    }
  });

  it('on a full semaphore: the retry is refused like any attempt, nothing handed out', async () => {
    const name = uniqueName();
    const holder = lockClient(env.redis).getPermitExpirableSemaphore(name);
    await holder.setPermits(1);
    const held = await holder.acquire({ leaseMs: 30_000 });
    const semaphore = proxied().getPermitExpirableSemaphore(name);
    const refused = proxy.refuseRequest(ACQUIRE.sha);
    try {
      await expect(semaphore.acquire({ waitMs: 300, leaseMs: 30_000 })).rejects.toBeInstanceOf(PermitAcquireTimeoutError);
      await refused;
      expect(await env.redis.zRange(semaphore.key, 0, -1)).toEqual([...held.ids]);
    } finally {
      proxy.disarm();
    }
    await held.release();
  });
});
