/**
 * Unknown option keys are refused (`InvalidArgumentError` naming the key and the nearest known one) by
 * every options object relock takes, before anything is sent or armed; object names have a length limit
 * and no control characters; and two messages that used to mislead (`tryLock(0, "5", "s")`).
 */
import { describe, expect, it } from '@jest/globals';
import { InvalidArgumentError, MAX_NAME_LENGTH, createLockClient, type LockClient } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { activeTimers, keys, lockClient, uniqueName } from '../support/helpers.js';

const env = useRedis();

/** The error `fn` threw or rejected with. */
async function failure(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('did not fail');
}

/** Expects `fn` to fail with `InvalidArgumentError` for `argument`, its message naming `near`, with no key written, no timer left and no subscription. */
async function refused(relock: LockClient, fn: () => unknown, argument: string, near: string | undefined): Promise<void> {
  const before = [await keys(env.redis, '*'), activeTimers()] as const;
  const error = await failure(fn);
  expect(error).toBeInstanceOf(InvalidArgumentError);
  expect((error as InvalidArgumentError).argument).toBe(argument);
  if (near !== undefined) expect((error as Error).message).toContain(`did you mean ${near}?`);
  expect([await keys(env.redis, '*'), activeTimers()]).toEqual(before);
  expect(relock.stats()).toMatchObject({ watchdogHolds: 0, subscriptions: 0 });
}

describe('unknown option keys', () => {
  it('createLockClient refuses a misspelt key, a misspelt nested key, a nested key given at the top level, and a syncReplicas of the wrong type', () => {
    const cases: [object, string, string][] = [
      [{ lockWatchdogTimeOut: 1000 }, 'lockWatchdogTimeOut', 'did you mean lockWatchdogTimeout?'],
      [{ retry: { retires: 2 } }, 'retry.retires', 'did you mean retries?'],
      [{ syncReplicas: { timout: 5 } }, 'syncReplicas.timout', 'did you mean timeout?'],
      [{ syncReplicas: 'yes' }, 'syncReplicas', 'must be true, false or { timeout: ms }'],
      [{ syncReplicas: null }, 'syncReplicas', 'must be true, false or { timeout: ms }'],
      [{ otel: { meterProvder: {} } }, 'otel.meterProvder', 'did you mean meterProvider?'],
      [{ meterProvider: {} }, 'meterProvider', 'it belongs in otel: { otel: { meterProvider } }'],
    ];
    for (const [options, argument, message] of cases) {
      const error = (() => {
        try {
          createLockClient({ redis: env.redis, ...options });
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect([(error as InvalidArgumentError).argument, (error as Error).message.includes(message)]).toEqual([argument, true]);
    }
  });

  it('acquire, withLock, a multi-lock, semaphores, a latch and a spin lock refuse keys they do not know, before sending anything', async () => {
    const relock = lockClient(env.redis);
    const name = uniqueName('keys');
    const lock = relock.getLock(name);
    await refused(relock, () => lock.acquire({ leaseMS: 1000 } as never), 'leaseMS', 'leaseMs');
    await refused(relock, () => lock.acquire({ waitMS: 100 } as never), 'waitMS', 'waitMs');
    await refused(relock, () => relock.withLock(name, () => 1, { lease: 5 } as never), 'lease', 'leaseMs');
    await refused(relock, () => relock.getMultiLock(lock, relock.getLock(uniqueName('keys'))).acquire({ identifier: 'x' } as never), 'identifier', undefined);
    await refused(relock, () => relock.getSemaphore(name).acquire({ permit: 2 } as never), 'permit', 'permits');
    await refused(relock, () => relock.getPermitExpirableSemaphore(name).acquire({ leasMs: 5 } as never), 'leasMs', 'leaseMs');
    await refused(relock, () => relock.getCountDownLatch(name).await({ timeout: 5 } as never), 'timeout', undefined);
    await refused(relock, () => relock.getSpinLock(name, { maxDelayMs: 5 } as never), 'options.maxDelayMs', 'maxDelay');
    // Known keys still pass.
    await (await lock.acquire({ leaseMs: 1000, waitMs: 0 })).release();
  });
});

describe('object names', () => {
  it(`are at most ${MAX_NAME_LENGTH} characters, without control characters`, async () => {
    const relock = lockClient(env.redis);
    const long = 'n'.repeat(MAX_NAME_LENGTH + 1);
    for (const [name, text] of [
      [long, `at most ${MAX_NAME_LENGTH} characters`],
      ['a\nb', 'control characters; found "\\n" (U+000A) at index 1'],
      ['a\0b', 'U+0000'],
      ['a\rb', 'U+000D'],
      ['tab\there', 'U+0009'],
    ] as const) {
      for (const make of [() => relock.getLock(name), () => relock.getSemaphore(name), () => relock.getPermitExpirableSemaphore(name), () => relock.getCountDownLatch(name), () => relock.getReadWriteLock(name)]) {
        const error = await failure(make);
        expect(error).toBeInstanceOf(InvalidArgumentError);
        expect((error as Error).message).toContain(text);
      }
    }
    const longest = 'é'.repeat(MAX_NAME_LENGTH);
    await (await relock.getLock(longest).acquire()).release();
  });
});

describe('messages', () => {
  it('tryLock(0, "5", "s") says the lease must be a number, not that "5" is an unknown unit', async () => {
    const relock = lockClient(env.redis);
    const error = await failure(() => relock.getLock(uniqueName('msg')).tryLock(0, '5' as never, 's'));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toBe('invalid leaseTime: must be a number; got the string "5" (e.g. tryLock(0, 5, "seconds"))');
  });

  it('semaphore.tryAcquire(2, "5", "s") says the wait time must be a number, and takes nothing', async () => {
    const relock = lockClient(env.redis);
    const semaphore = relock.getSemaphore(uniqueName('msg'));
    await semaphore.trySetPermits(3);
    const error = await failure(() => semaphore.tryAcquire(2, '5' as never, 's'));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toBe('invalid waitTime: must be a number; got the string "5" (e.g. tryAcquire(2, 5, "seconds"))');
    expect(await semaphore.availablePermits()).toBe(3);
  });

  it('expirable semaphore tryAcquire with a time given as a string names that time, and takes nothing', async () => {
    const relock = lockClient(env.redis);
    const semaphore = relock.getPermitExpirableSemaphore(uniqueName('msg'));
    await semaphore.trySetPermits(3);
    const cases: Array<[() => Promise<unknown>, string]> = [
      [() => semaphore.tryAcquire(2, '5' as never, 60, 's'), 'invalid waitTime: must be a number; got the string "5" (e.g. tryAcquire(2, 5, 60, "seconds"))'],
      [() => semaphore.tryAcquire(0, '60' as never, 's'), 'invalid leaseTime: must be a number; got the string "60" (e.g. tryAcquire(0, 60, "seconds"))'],
      [() => semaphore.tryAcquire(2, 5, '60' as never, 's'), 'invalid leaseTime: must be a number; got the string "60" (e.g. tryAcquire(2, 5, 60, "seconds"))'],
    ];
    for (const [call, message] of cases) {
      const error = await failure(call);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as Error).message).toBe(message);
    }
    expect(await semaphore.availablePermits()).toBe(3);
  });
});
