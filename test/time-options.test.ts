/**
 * Times in options objects cannot be mistaken: a plain number is milliseconds only under a name that says
 * so (`waitMs`, `leaseMs`); `waitTime`/`leaseTime` need their `unit`. Checked on every options object with
 * times (locks and their variants, multi-lock, both semaphores, the latch, withLock), before anything is
 * sent to Redis.
 */
import { describe, expect, it } from '@jest/globals';
import { InvalidArgumentError, type LockClient } from '../src/index.js';
import { useRedis } from './support/harness.js';
import { commandCalls, keys, lockClient, uniqueName } from './support/helpers.js';

const env = useRedis();

/** Every call that takes an options object with times, on fresh names; `lease` when it takes a lease. */
function optionCalls(client: LockClient, name: string): Array<{ what: string; lease: boolean; call: (options: object) => Promise<unknown> }> {
  return [
    { what: 'RLock.acquire', lease: true, call: (o) => client.getLock(`${name}:lock`).acquire(o) },
    { what: 'FencedLock.acquire', lease: true, call: (o) => client.getFencedLock(`${name}:fenced`).acquire(o) },
    { what: 'RFairLock.acquire', lease: true, call: (o) => client.getFairLock(`${name}:fair`).acquire(o) },
    { what: 'RReadLock.acquire', lease: true, call: (o) => client.getReadWriteLock(`${name}:rw`).readLock().acquire(o) },
    { what: 'SpinLock.acquire', lease: true, call: (o) => client.getSpinLock(`${name}:spin`).acquire(o) },
    { what: 'MultiLock.acquire', lease: true, call: (o) => client.getMultiLock(client.getLock(`${name}:m1`), client.getLock(`${name}:m2`)).acquire(o) },
    { what: 'RedLock.acquire', lease: true, call: (o) => client.getRedLock(client.getLock(`${name}:r1`)).acquire(o) },
    { what: 'withLock', lease: true, call: (o) => client.withLock(`${name}:with`, () => 1, o) },
    { what: 'RPermitExpirableSemaphore.acquire', lease: true, call: (o) => client.getPermitExpirableSemaphore(`${name}:pes`).acquire(o) },
    { what: 'RSemaphore.acquire', lease: false, call: (o) => client.getSemaphore(`${name}:sem`).acquire(o) },
    { what: 'RCountDownLatch.await', lease: false, call: (o) => client.getCountDownLatch(`${name}:latch`).await(o) },
  ];
}

/** `object` as a JavaScript caller sees it: its positional methods called with an options object. */
const untyped = (object: object): Record<'tryLock' | 'lock' | 'tryAcquire', (options: object) => Promise<unknown>> => object as never;

describe('time options', () => {
  it('refuses waitTime or leaseTime without unit, citing both right forms with the caller\'s number, and sends nothing', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName('units');
    const scriptsBefore = (await commandCalls(env.redis, 'evalsha')) + (await commandCalls(env.redis, 'eval'));
    for (const { what, lease, call } of optionCalls(client, name)) {
      const wait = await call({ waitTime: 5 }).catch((e: unknown) => e);
      expect([what, wait]).toEqual([what, expect.any(InvalidArgumentError)]);
      expect((wait as InvalidArgumentError).argument).toBe('waitTime');
      expect((wait as Error).message).toContain("write { waitMs: 5 } for 5 milliseconds, or { waitTime: 5, unit: 'seconds' } for 5 seconds");
      if (!lease) continue;
      const error = await call({ leaseTime: 30 }).catch((e: unknown) => e);
      expect([what, (error as InvalidArgumentError).argument]).toEqual([what, 'leaseTime']);
      expect((error as Error).message).toContain("write { leaseMs: 30 } for 30 milliseconds, or { leaseTime: 30, unit: 'seconds' } for 30 seconds");
      // Both names for one time, and a unit that applies to nothing, are refused as well.
      await expect(call({ leaseMs: 5000, leaseTime: 5, unit: 'seconds' })).rejects.toThrow(/leaseTime.*leaseMs.*not both/);
    }
    for (const { what, call } of optionCalls(client, name)) {
      await expect([what, await call({ waitMs: 100, waitTime: 1, unit: 's' }).catch((e: unknown) => String(e))]).toEqual([what, expect.stringMatching(/waitTime.*not both/)]);
      await expect([what, await call({ waitMs: 100, unit: 's' }).catch((e: unknown) => String(e))]).toEqual([what, expect.stringMatching(/invalid unit: applies only to waitTime and leaseTime/)]);
    }
    expect(await keys(env.redis, `*${name}*`)).toEqual([]);
    expect((await commandCalls(env.redis, 'evalsha')) + (await commandCalls(env.redis, 'eval'))).toBe(scriptsBefore);
  });

  it('takes leaseMs as milliseconds and leaseTime in its unit: the same lease both ways', async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(uniqueName('units'));
    const inMs = await lock.acquire({ leaseMs: 5000, waitMs: 0 });
    expect(inMs.leaseTime).toBe(5000);
    const ttlMs = await lock.remainTimeToLive();
    await inMs.release();
    const inSeconds = await lock.acquire({ leaseTime: 5, unit: 'seconds', waitTime: 0 });
    expect(inSeconds.leaseTime).toBe(5000);
    const ttlSeconds = await lock.remainTimeToLive();
    await inSeconds.release();
    for (const ttl of [ttlMs, ttlSeconds]) {
      expect(ttl).toBeGreaterThan(4000);
      expect(ttl).toBeLessThanOrEqual(5000);
    }

    const semaphore = client.getPermitExpirableSemaphore(uniqueName('units'));
    await semaphore.trySetPermits(1);
    const permit = await semaphore.acquire({ leaseTime: 2, unit: 'minutes' });
    expect(permit.leaseTime).toBe(120_000);
    await expect(permit.updateLeaseTime(5 as number, undefined as never)).rejects.toThrow(/invalid unit/);
    await permit.updateLeaseTime(5, 'seconds');
    expect(permit.leaseTime).toBe(5000);
    await permit.release();

    // Wait times: a latch that never opens, waited for 50 ms either way.
    const latch = client.getCountDownLatch(uniqueName('units'));
    await latch.trySetCount(1);
    expect(await latch.await({ waitMs: 50 })).toBe(false);
    expect(await latch.await({ waitTime: 0.05, unit: 's' })).toBe(false);
  });

  it('says so when an options object goes to a positional method, names the safe-integer limit, refuses a lease under 1 ms, and sends nothing (newcomer finding 8)', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName('positional');
    const scriptsBefore = (await commandCalls(env.redis, 'evalsha')) + (await commandCalls(env.redis, 'eval'));
    const signal = new AbortController().signal;
    const lock = client.getLock(`${name}:lock`);
    const pes = client.getPermitExpirableSemaphore(`${name}:pes`);
    const semaphore = client.getSemaphore(`${name}:sem`);
    const positional: Array<[string, () => Promise<unknown>, RegExp]> = [
      ['RLock.tryLock', () => untyped(lock).tryLock({ signal }), /invalid waitTime: got an object, but tryLock takes positional arguments, e\.g\. tryLock\(1, 5, "seconds"\); for options .* use acquire\(options\)/],
      ['FencedLock.tryLock', () => untyped(client.getFencedLock(`${name}:fenced`)).tryLock({ waitMs: 5 }), /tryLock takes positional arguments.*acquire\(options\)/],
      ['MultiLock.tryLock', () => untyped(client.getMultiLock(lock)).tryLock({ waitMs: 5 }), /tryLock takes positional arguments.*acquire\(options\)/],
      ['RLock.lock', () => untyped(lock).lock({ leaseMs: 5 }), /invalid leaseTime: got an object, but lock takes positional arguments.*acquire\(options\)/],
      ['RPermitExpirableSemaphore.tryAcquire', () => untyped(pes).tryAcquire({ leaseMs: 1000 }), /tryAcquire takes positional arguments.*acquire\(options\)/],
      ['RSemaphore.tryAcquire', () => untyped(semaphore).tryAcquire({ waitMs: 5 }), /tryAcquire takes positional arguments.*acquire\(options\)/],
    ];
    for (const [what, call, message] of positional) {
      const error = await call().catch((e: unknown) => e);
      expect([what, error]).toEqual([what, expect.any(InvalidArgumentError)]);
      expect([what, (error as Error).message]).toEqual([what, expect.stringMatching(message)]);
      expect((error as Error).message).not.toMatch(/time unit is required/);
    }
    await expect(semaphore.release(2 ** 60)).rejects.toThrow(/invalid permits: must be a whole number of permits >= 0, at most 9007199254740991 \(Number\.MAX_SAFE_INTEGER\); got 1152921504606847000/);
    await expect(semaphore.trySetPermits(2 ** 60)).rejects.toThrow(/at most 9007199254740991/);
    await expect(semaphore.addPermits(-(2 ** 60))).rejects.toThrow(/at least -9007199254740991 \(-Number\.MAX_SAFE_INTEGER\)/);
    // Sub-millisecond leases: every form refused (the key would be gone before the caller heard of it).
    await expect(lock.tryLock(0, 0.0001, 'ms')).rejects.toThrow(new InvalidArgumentError('leaseTime', 'must be at least 1 ms; got 0.0001 ms'));
    await expect(lock.acquire({ leaseMs: 0.5 })).rejects.toThrow(/invalid leaseMs: must be at least 1 ms; got 0\.5/);
    await expect(lock.acquire({ leaseTime: 0.0005, unit: 's' })).rejects.toThrow(/invalid leaseTime: must be at least 1 ms; got 0\.0005 s/);
    expect(await keys(env.redis, `*${name}*`)).toEqual([]);
    expect((await commandCalls(env.redis, 'evalsha')) + (await commandCalls(env.redis, 'eval'))).toBe(scriptsBefore);
    // 1 ms and 1.5 ms (rounded up to 2) are still leases.
    expect(await lock.tryLock(0, 1.5, 'ms')).toBe(true);
  });

  it('refuses a time that is not a number (a string, a bigint, an object) with "must be a number; got <type>", naming the argument, and sends nothing', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName('not-a-number');
    const scriptsBefore = (await commandCalls(env.redis, 'evalsha')) + (await commandCalls(env.redis, 'eval'));
    const lock = client.getLock(`${name}:lock`);
    const semaphore = client.getSemaphore(`${name}:sem`);
    const pes = client.getPermitExpirableSemaphore(`${name}:pes`);
    const latch = client.getCountDownLatch(`${name}:latch`);
    const cases: Array<[string, () => Promise<unknown>, string, string]> = [
      ['RLock.tryLock wait', () => lock.tryLock('5' as never, 'seconds'), 'waitTime', 'string'],
      ['RLock.tryLock lease', () => lock.tryLock(0, 5n as never, 'seconds'), 'leaseTime', 'bigint'],
      ['RLock.lock lease', () => lock.lock('5' as never, 'seconds'), 'leaseTime', 'string'],
      ['RLock.acquire waitMs', () => lock.acquire({ waitMs: '5' as never }), 'waitMs', 'string'],
      ['RLock.acquire waitTime', () => lock.acquire({ waitTime: 5n as never, unit: 's' }), 'waitTime', 'bigint'],
      ['RLock.acquire leaseMs', () => lock.acquire({ leaseMs: '5000' as never }), 'leaseMs', 'string'],
      ['RLock.acquire leaseTime', () => lock.acquire({ leaseTime: {} as never, unit: 's' }), 'leaseTime', 'object'],
      ['FencedLock.lock lease', () => client.getFencedLock(`${name}:fenced`).lock('5' as never, 'seconds'), 'leaseTime', 'string'],
      ['MultiLock.lock lease', () => client.getMultiLock(lock).lock('5' as never, 'seconds'), 'leaseTime', 'string'],
      ['RSemaphore.tryAcquire wait', () => semaphore.tryAcquire(1, 5n as never, 'seconds'), 'waitTime', 'bigint'],
      ['RPermitExpirableSemaphore.tryAcquire lease', () => pes.tryAcquire(0, 60n as never, 'seconds'), 'leaseTime', 'bigint'],
      ['RCountDownLatch.await waitMs', () => latch.await({ waitMs: '5' as never }), 'waitMs', 'string'],
    ];
    for (const [what, call, argument, type] of cases) {
      const error = await call().catch((e: unknown) => e);
      expect([what, error]).toEqual([what, expect.any(InvalidArgumentError)]);
      expect([what, (error as InvalidArgumentError).argument, (error as Error).message]).toEqual([what, argument, `invalid ${argument}: must be a number; got ${type}`]);
    }
    expect(await keys(env.redis, `*${name}*`)).toEqual([]);
    expect((await commandCalls(env.redis, 'evalsha')) + (await commandCalls(env.redis, 'eval'))).toBe(scriptsBefore);
  });
});
