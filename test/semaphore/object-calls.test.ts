import { describe, expect, it } from '@jest/globals';
import { InvalidArgumentError, PermitNotHeldError, WrongTypeError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis();

/** Issue 20: Redisson's isExists / delete / expire, releaseIfExists, trySetPermits with a TTL, getLeaseTime. */
describe('RSemaphore: isExists, delete, expire, releaseIfExists, trySetPermits with a time to live', () => {
  it('releaseIfExists adds permits only to an existing semaphore', async () => {
    const semaphore = lockClient(env.redis).getSemaphore(uniqueName());
    expect(await semaphore.isExists()).toBe(false);
    expect(await semaphore.releaseIfExists(2)).toBe(false);
    expect(await env.redis.exists(semaphore.key)).toBe(0);
    expect(await semaphore.trySetPermits(1)).toBe(true);
    expect(await semaphore.isExists()).toBe(true);
    expect(await semaphore.releaseIfExists(2)).toBe(true);
    expect(await semaphore.availablePermits()).toBe(3);
    await expect(semaphore.releaseIfExists(-1)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('delete removes it, expire gives it a time to live, trySetPermits(n, ttl, unit) sets one on creation only', async () => {
    const client = lockClient(env.redis);
    const semaphore = client.getSemaphore(uniqueName());
    expect(await semaphore.delete()).toBe(false);
    expect(await semaphore.trySetPermits(3, 10, 's')).toBe(true);
    expect(await env.redis.pTTL(semaphore.key)).toBeGreaterThan(9000);
    expect(await semaphore.trySetPermits(5, 1, 'h')).toBe(false);
    expect(await env.redis.pTTL(semaphore.key)).toBeLessThanOrEqual(10_000);
    expect(await semaphore.expire(200, 'ms')).toBe(true);
    await waitUntil(async () => !(await semaphore.isExists()), 3000, 10, 'the semaphore to expire');
    expect(await semaphore.trySetPermits(1)).toBe(true);
    expect(await env.redis.pTTL(semaphore.key)).toBe(-1);
    expect(await semaphore.delete()).toBe(true);
    expect(await semaphore.isExists()).toBe(false);
    await expect(semaphore.trySetPermits(1, 0, 's')).rejects.toThrow(/timeToLive/);
    await expect(semaphore.trySetPermits(1, 5)).rejects.toThrow(/unit/);
    await expect(semaphore.expire(-1, 's')).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await semaphore.isExists()).toBe(false);
  });

  it('delete and expire refuse a name another kind holds, changing nothing', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getLock(name).lock();
    const error = await client.getSemaphore(name).delete().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WrongTypeError);
    expect((error as WrongTypeError).foundKind).toBe('lock');
    await expect(client.getCountDownLatch(name).delete()).rejects.toBeInstanceOf(WrongTypeError);
    await expect(client.getPermitExpirableSemaphore(name).expire(1, 's')).rejects.toBeInstanceOf(WrongTypeError);
    expect(await env.redis.pTTL(name)).toBeGreaterThan(1000);
    expect(await client.getLock(name).isLocked()).toBe(true);
  });
});

describe('RCountDownLatch: isExists, delete, expire', () => {
  it('delete opens the latch and wakes its awaiters; expire gives it a time to live', async () => {
    const client = lockClient(env.redis);
    const latch = client.getCountDownLatch(uniqueName());
    expect(await latch.isExists()).toBe(false);
    await latch.trySetCount(2);
    expect(await latch.isExists()).toBe(true);
    const opened = latch.await(5, 's');
    await waitUntil(async () => Number((await env.redis.sendCommand(['PUBSUB', 'NUMSUB', latch.channel]) as unknown[])[1]) > 0, 3000, 10, 'the awaiter');
    expect(await latch.delete()).toBe(true);
    expect(await opened).toBe(true);
    expect(await latch.getCount()).toBe(0);
    await latch.trySetCount(1);
    expect(await latch.expire(5, 's')).toBe(true);
    expect(await env.redis.pTTL(latch.key)).toBeGreaterThan(4000);
    expect(await latch.delete()).toBe(true);
  });
});

describe('RPermitExpirableSemaphore: getLeaseTime, isExists, delete, expire, trySetPermits with a time to live', () => {
  it('getLeaseTime tells the time left of a permit, PermitNotHeldError once it is released', async () => {
    const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(uniqueName());
    expect(await semaphore.isExists()).toBe(false);
    expect(await semaphore.trySetPermits(2, 1, 'h')).toBe(true);
    expect(await env.redis.pTTL(semaphore.permitsKey)).toBeGreaterThan(3_000_000);
    expect(await semaphore.isExists()).toBe(true);
    const id = (await semaphore.tryAcquire(0, 10, 's'))!;
    const left = await semaphore.getLeaseTime(id);
    expect(left).toBeGreaterThan(9000);
    expect(left).toBeLessThanOrEqual(10_000);
    await semaphore.release(id);
    await expect(semaphore.getLeaseTime(id)).rejects.toBeInstanceOf(PermitNotHeldError);
    await expect(semaphore.getLeaseTime('')).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('delete removes the permits and their number; expire sets a time to live on both', async () => {
    const semaphore = lockClient(env.redis).getPermitExpirableSemaphore(uniqueName());
    await semaphore.trySetPermits(2);
    const id = (await semaphore.tryAcquire(0, 10, 's'))!;
    expect(await semaphore.expire(20, 's')).toBe(true);
    expect(await env.redis.pTTL(semaphore.permitsKey)).toBeGreaterThan(19_000);
    expect(await semaphore.delete()).toBe(true);
    expect(await semaphore.isExists()).toBe(false);
    await expect(semaphore.release(id)).rejects.toBeInstanceOf(PermitNotHeldError);
    expect(await semaphore.delete()).toBe(false);
  });
});
