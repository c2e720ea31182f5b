/**
 * Every read and write of a relock object refuses a key of another kind or of data relock did not
 * write with `WrongTypeError`, whose message says what relock expected and what it found; an RRedLock
 * whose nodes answer so rejects with that error, not `RedisUnavailableError`.
 */
import { describe, expect, it } from '@jest/globals';
import { WrongTypeError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName } from '../support/helpers.js';

const env = useRedis();

/** The error the promise `call` returns rejected with. */
async function rejection(call: Promise<unknown> | (() => Promise<unknown>)): Promise<unknown> {
  return (typeof call === 'function' ? call() : call).then(
    (value) => {
      throw new Error(`resolved with ${String(value)}`);
    },
    (error: unknown) => error,
  );
}

describe('wrong kinds', () => {
  it('an RSemaphore on a plain string: every call throws WrongTypeError (no Lua error, no NaN), and the string is untouched', async () => {
    const relock = lockClient(env.redis);
    const name = uniqueName('plain');
    await env.redis.set(name, 'hello');
    const semaphore = relock.getSemaphore(name);
    const calls = [
      () => semaphore.availablePermits(),
      () => semaphore.tryAcquire(),
      () => semaphore.acquire({ waitMs: 50 }),
      () => semaphore.release(),
      () => semaphore.addPermits(2),
      () => semaphore.trySetPermits(3),
      () => semaphore.releaseIfExists(1),
      () => semaphore.drainPermits(),
      () => semaphore.isExists(),
      () => semaphore.delete(),
      () => semaphore.expire(1, 's'),
    ];
    for (const call of calls) {
      const error = await rejection(call);
      expect(error).toBeInstanceOf(WrongTypeError);
      expect((error as WrongTypeError).message).toBe(
        `key "${name}" holds a Redis string that is not an integer, where a semaphore keeps its free permit count, an integer in a Redis string: the name is used by data relock did not write; nothing was written`,
      );
    }
    expect(await env.redis.get(name)).toBe('hello');
  });

  it("a lock's reads refuse a semaphore's key and a plain string (isLocked was true for both)", async () => {
    const relock = lockClient(env.redis);
    const semaphoreName = uniqueName('sem');
    await relock.getSemaphore(semaphoreName).trySetPermits(2);
    const plain = uniqueName('plain');
    await env.redis.set(plain, 'x');
    for (const lock of [relock.getLock(semaphoreName), relock.getFencedLock(semaphoreName), relock.getReadWriteLock(semaphoreName).readLock()]) {
      const error = await rejection(lock.isLocked());
      expect(error).toBeInstanceOf(WrongTypeError);
      expect((error as WrongTypeError).foundKind).toBe('semaphore');
      expect((error as Error).message).toContain(`belongs to a semaphore, so a`);
      await expect(lock.getHoldCount()).rejects.toBeInstanceOf(WrongTypeError);
      await expect(lock.remainTimeToLive()).rejects.toBeInstanceOf(WrongTypeError);
    }
    const lock = relock.getLock(plain);
    for (const read of [() => lock.isLocked(), () => lock.isHeldByCurrentContext(), () => lock.remainTimeToLive()]) {
      const error = await rejection(read());
      expect(error).toBeInstanceOf(WrongTypeError);
      expect((error as Error).message).toBe(`key "${plain}" holds a Redis string, where a lock keeps a Redis hash with the field kind=lock: the name is used by data relock did not write; nothing was written`);
    }
    // An RLock's key read by a semaphore and an expirable semaphore.
    const held = uniqueName('held');
    await relock.getLock(held).lock();
    for (const read of [() => relock.getSemaphore(held).availablePermits(), () => relock.getSemaphore(held).isExists(), () => relock.getPermitExpirableSemaphore(held).isExists()]) {
      const error = await rejection(read());
      expect([error instanceof WrongTypeError, (error as WrongTypeError).foundKind]).toEqual([true, 'lock']);
    }
  });

  it('a hash without relock\'s kind field: the message says what a lock expects and what it found', async () => {
    const relock = lockClient(env.redis);
    const name = uniqueName('foreign');
    await env.redis.hSet(name, 'field', 'value');
    for (const call of [() => relock.getLock(name).lock(), () => relock.getLock(name).isLocked()]) {
      const error = await rejection(call);
      expect(error).toBeInstanceOf(WrongTypeError);
      expect((error as Error).message).toBe(`key "${name}" holds a Redis hash without relock's kind field, where a lock keeps a Redis hash with the field kind=lock: the name is used by data relock did not write; nothing was written`);
    }
    const expirable = uniqueName('exp');
    await relock.getPermitExpirableSemaphore(expirable).trySetPermits(1);
    await relock.getPermitExpirableSemaphore(expirable).acquire();
    const error = await rejection(relock.getLock(expirable).lock());
    expect((error as Error).message).toContain('belongs to an expirable-semaphore, so a lock cannot use it');
  });

  it('a WrongTypeError made without the kind asked for (as an application may make one) names the Redis types found and expected', () => {
    const error = new WrongTypeError('orders', 'string', 'hash');
    expect([error.code, error.askedKind, error.foundKind]).toEqual(['WRONG_TYPE', undefined, undefined]);
    expect(error.message).toBe('key "orders" holds a Redis string, where relock keeps a Redis hash: the name is used by data relock did not write; nothing was written');
    expect(new WrongTypeError('orders', 'list', 'zset').message).toContain('holds a Redis list, where relock keeps a Redis zset:');
  });

  it('an RRedLock whose nodes hold other data rejects with their WrongTypeError, not RedisUnavailableError', async () => {
    const nodes = ['a:', 'b:', 'c:'].map((keyPrefix) => lockClient(env.redis, { keyPrefix }));
    const name = uniqueName('red');
    await env.redis.set(`a:${name}`, 'x');
    await env.redis.set(`b:${name}`, 'x');
    const red = nodes[0]!.getRedLock(...nodes.map((n) => n.getLock(name)));
    for (const call of [() => red.acquire({ waitMs: 0 }), () => red.tryLock(100, 'ms'), () => red.isHeldByCurrentContext()]) {
      const error = await rejection(call);
      expect(error).toBeInstanceOf(WrongTypeError);
      expect((error as WrongTypeError).key).toMatch(/^[ab]:/);
    }
    expect(await env.redis.exists(`c:${name}`)).toBe(0);
  });
});
