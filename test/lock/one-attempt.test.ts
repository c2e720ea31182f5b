import { describe, expect, it } from '@jest/globals';
import { InvalidArgumentError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { commandCalls, lockClient, uniqueName } from '../support/helpers.js';

const env = useRedis();

/** `promise`, or 'still waiting' when it has not settled within `ms` (a wait without limit would hang the test). */
async function within<T>(promise: Promise<T>, ms = 2000): Promise<T | 'still waiting'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still waiting'>((resolve) => (timer = setTimeout(() => resolve('still waiting'), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a positional wait <= 0 makes one attempt, as in Redisson (issue 20, defect 1)', () => {
  it('RLock.tryLock(-1, lease, unit) and tryLock(-1, unit) on a busy lock make one attempt and resolve false', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getLock(name).lock();
    const other = client.getLock(name);
    const before = await commandCalls(env.redis, 'evalsha');
    expect(await within(other.tryLock(-1, 5, 'seconds'))).toBe(false);
    expect(await within(other.tryLock(-1, 'seconds'))).toBe(false);
    expect(await within(other.tryLock(-5, 'ms'))).toBe(false);
    expect((await commandCalls(env.redis, 'evalsha')) - before).toBe(3);
  });

  it('tryLock(-1, lease, unit) on a free lock takes it with that lease', async () => {
    const lock = lockClient(env.redis).getLock(uniqueName());
    expect(await lock.tryLock(-1, 5, 'seconds')).toBe(true);
    expect(await lock.remainTimeToLive()).toBeGreaterThan(4000);
  });

  it('the multi-lock: tryLock(-1, lease, unit) with a busy member makes one round and holds nothing', async () => {
    const client = lockClient(env.redis);
    const [a, b] = [uniqueName(), uniqueName()];
    await client.getLock(b).lock();
    const multi = client.getMultiLock(client.getLock(a), client.getLock(b));
    expect(await within(multi.tryLock(-1, 5, 'seconds'))).toBe(false);
    expect(await within(multi.tryLock(-1, 'seconds'))).toBe(false);
    expect(await env.redis.exists(a)).toBe(0);
  });

  it('semaphores and the latch: a wait of -1 tries once', async () => {
    const client = lockClient(env.redis);
    const semaphore = client.getSemaphore(uniqueName());
    expect(await within(semaphore.tryAcquire(-1, 'ms'))).toBe(false);
    expect(await within(semaphore.tryAcquire(2, -1, 'ms'))).toBe(false);
    const permits = client.getPermitExpirableSemaphore(uniqueName());
    expect(await within(permits.tryAcquire(-1, 'ms'))).toBeUndefined();
    expect(await within(permits.tryAcquire(-1, 5, 's'))).toBeUndefined();
    const latch = client.getCountDownLatch(uniqueName());
    await latch.trySetCount(1);
    expect(await within(latch.await(-1, 'ms'))).toBe(false);
  });

  it('"wait until free" is lock() or an options object without a wait time; a negative wait in options is refused', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const holder = await client.getLock(name).acquire({ leaseMs: 300 });
    expect(holder.leaseTime).toBe(300);
    const waited = await within(client.getLock(name).acquire({ waitMs: Infinity }), 5000);
    expect(waited).not.toBe('still waiting');
    for (const options of [{ waitMs: -1 }, { waitTime: -1, unit: 's' as const }]) {
      const error = await client.getLock(name).acquire(options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as Error).message).toMatch(/Infinity to wait until free/);
    }
    await expect(client.getSemaphore(uniqueName()).acquire({ waitMs: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(client.getCountDownLatch(uniqueName()).await({ waitMs: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
