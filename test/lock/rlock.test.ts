import { describe, expect, it } from '@jest/globals';
import { IllegalMonitorStateError, InvalidArgumentError, runInContext, WrongTypeError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { commandCalls, lockClient, sleep, uniqueName } from '../support/helpers.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';

const env = useRedis();

describe('RLock basics', () => {
  it('stores owner → hold count in a hash, counts reentry and resets the TTL on every acquire', () => runInContext(async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(uniqueName());
    expect(await lock.tryLock(1, 5, 'seconds')).toBe(true);
    const [owner] = Object.keys(await env.redis.hGetAll(lock.key));
    expect(owner).toMatch(new RegExp(`^${client.id}:`));
    expect(await env.redis.hGet(lock.key, owner!)).toBe('1');

    await env.redis.pExpire(lock.key, 1000);
    expect(await lock.tryLock(0, 10, 'seconds')).toBe(true);
    expect(await lock.getHoldCount()).toBe(2);
    const ttl = await lock.remainTimeToLive();
    expect(ttl).toBeGreaterThan(9000);
    expect(ttl).toBeLessThanOrEqual(10_000);

    await lock.unlock();
    expect(await lock.getHoldCount()).toBe(1);
    expect(await lock.isLocked()).toBe(true);
    await lock.unlock();
    expect(await lock.isLocked()).toBe(false);
    expect(await lock.remainTimeToLive()).toBe(-2);
  }));

  it('tryLock without a lease writes lockWatchdogTimeout as the TTL', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 4000 });
    const lock = client.getLock(uniqueName());
    expect(await lock.tryLock()).toBe(true);
    expect(await lock.remainTimeToLive()).toBeGreaterThan(3500);
    await lock.unlock();
  });

  it('refuses a second owner and tells the holder\'s remaining TTL through remainTimeToLive', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    expect(await client.getLock(name).tryLock(0, 3, 's')).toBe(true);
    const other = client.getLock(name);
    expect(await other.tryLock(0, 3, 's')).toBe(false);
    expect(await other.isHeldByCurrentContext()).toBe(false);
    expect(await other.getHoldCount()).toBe(0);
    expect(await other.remainTimeToLive()).toBeGreaterThan(2000);
  });

  it('tryLock(0, …) makes exactly one attempt when the lock is busy (known failure 13)', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getLock(name).lock();
    const other = client.getLock(name);
    const before = await commandCalls(env.redis, 'evalsha');
    expect(await other.tryLock(0, 5, 'seconds')).toBe(false);
    expect(await other.tryLock()).toBe(false);
    const after = await commandCalls(env.redis, 'evalsha');
    expect(after - before).toBe(2);
  });

  it('unlock by a non-owner throws IllegalMonitorStateError naming the lock and owner, and leaves the lock', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const holder = client.getLock(name);
    await holder.lock();
    const stranger = client.getLock(name);
    const error = await stranger.unlock().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IllegalMonitorStateError);
    expect((error as Error).message).toContain(name);
    expect((error as IllegalMonitorStateError).owner).toMatch(new RegExp(`^${client.id}:`));
    expect(await holder.isHeldByCurrentContext()).toBe(true);
    await holder.unlock();
  });

  it('an unlock after the lease expired fails at once and leaves the new holder\'s lock alone (known failures 1, 2)', async () => {
    // The refused unlock is one round trip (one EVALSHA, counted), against a bound of 100 ms: a round that
    // failed while this process's loop or Redis stalled past 80 ms (stallTolerant with probeReplies) is
    // repeated, up to 3 rounds, on a fresh name, B's hold released; an unlock that retried its refusal
    // sends more than one call and waits out the retry policy's backoff, every round.
    await stallTolerant(async (_, slowReply) => {
      const clientA = lockClient(env.redis);
      const clientB = lockClient(env.redis);
      const name = uniqueName();
      const a = clientA.getLock(name);
      expect(await a.tryLock(0, 100, 'ms')).toBe(true);
      const b = clientB.getLock(name);
      expect(await b.tryLock(2, 5, 'seconds')).toBe(true);
      const stop = probeReplies(env.redis, slowReply);
      try {
        const before = await commandCalls(env.redis, 'evalsha');
        const started = performance.now();
        await expect(a.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
        const took = performance.now() - started;
        stop();
        expect({ tookMs: took < 100 ? '< 100' : Math.round(took), calls: (await commandCalls(env.redis, 'evalsha')) - before }).toEqual({ tookMs: '< 100', calls: 1 });
        expect(await b.isHeldByCurrentContext()).toBe(true);
        expect(await b.getHoldCount()).toBe(1);
      } finally {
        stop();
        await b.unlock().catch(() => {});
      }
    }, 80);
  });

  it('sub-second leases are honoured to the millisecond (known failure 10)', async () => {
    const client = lockClient(env.redis);
    // The waiter gets in at the 250 ms lease's end, against a bound of 600 ms: a round that failed while
    // this process's loop or Redis stalled past 300 ms (stallTolerant with probeReplies) is repeated, up to
    // 3 rounds, on a fresh name; a waiter that does not wake at the holder's TTL waits its 2 s every round.
    await stallTolerant(async (_, slowReply) => {
      const lock = client.getLock(uniqueName());
      expect(await lock.tryLock(0, 250, 'ms')).toBe(true);
      const ttl = await lock.remainTimeToLive();
      expect(ttl).toBeGreaterThan(150);
      expect(ttl).toBeLessThanOrEqual(250);
      const waiter = client.getLock(lock.name);
      const stop = probeReplies(env.redis, slowReply);
      const started = performance.now();
      const waiting = waiter.tryLock(2, 'seconds');
      try {
        expect(await waiting).toBe(true);
        const took = performance.now() - started;
        stop();
        expect(took).toBeLessThan(600);
      } finally {
        stop();
        if (await waiting.catch(() => false)) await waiter.unlock();
      }
    }, 300);
  });

  it('a name that holds a string fails with WrongTypeError naming the key and its type, at once (known failure 3)', async () => {
    const client = lockClient(env.redis);
    // The refusal is two round trips (the attempt, then the read of the key's type: two EVALSHAs, counted),
    // against a bound of 1,000 ms: a round that failed while this process's loop or Redis stalled past 400
    // ms (stallTolerant with probeReplies) is repeated, up to 3 rounds, on a fresh name, the string
    // deleted; a refusal that is retried or waited on sends more calls, every round.
    await stallTolerant(async (_, slowReply) => {
      const taken = uniqueName();
      await env.redis.set(taken, 'application data');
      const stop = probeReplies(env.redis, slowReply);
      try {
        const before = await commandCalls(env.redis, 'evalsha');
        const started = performance.now();
        const error = await client.getLock(taken).tryLock(5, 'seconds').catch((e: unknown) => e);
        const took = performance.now() - started;
        stop();
        expect(error).toBeInstanceOf(WrongTypeError);
        expect((error as WrongTypeError).key).toBe(taken);
        expect((error as WrongTypeError).actualType).toBe('string');
        expect({ tookMs: took < 1000 ? '< 1000' : Math.round(took), calls: (await commandCalls(env.redis, 'evalsha')) - before }).toEqual({ tookMs: '< 1000', calls: 2 });
      } finally {
        stop();
        await env.redis.del(taken);
      }
    }, 400);
    const name = uniqueName();
    const lock = client.getLock(name);
    await env.redis.rPush(name, 'x');
    await expect(lock.lock()).rejects.toThrow(/holds a Redis list/);
    await expect(lock.forceUnlock()).rejects.toBeInstanceOf(WrongTypeError);
    expect(await env.redis.lLen(name)).toBe(1); // application data is never deleted
    await env.redis.del(name);
  });

  it('forceUnlock deletes the lock whoever holds it and wakes a waiter', async () => {
    const client = lockClient(env.redis);
    // The waiter is woken by the message within ms, against a bound of 200 ms: a round that failed while
    // this process's loop or Redis stalled past 150 ms (stallTolerant with probeReplies) is repeated, up to
    // 3 rounds, on a fresh name; without the message the waiter sleeps on the holder's 30 s TTL to the end
    // of its 5 s wait, every round.
    await stallTolerant(async (_, slowReply) => {
      const name = uniqueName();
      await client.getLock(name).lock();
      const waiting = client.getLock(name).tryLock(5, 'seconds');
      let stop = (): void => undefined;
      try {
        await sleep(50);
        stop = probeReplies(env.redis, slowReply);
        const started = performance.now();
        expect(await client.getLock(name).forceUnlock()).toBe(true);
        expect(await waiting).toBe(true);
        const took = performance.now() - started;
        stop();
        expect(took).toBeLessThan(200);
        expect(await client.getLock(name).forceUnlock()).toBe(true);
      } finally {
        stop();
        // Whoever holds it (the waiter, or the first holder after a failed round): nothing is left behind.
        await waiting.catch(() => false);
        await client.getLock(name).forceUnlock();
      }
      expect(await client.getLock(name).forceUnlock()).toBe(false);
    }, 150);
  });

  it('rejects bad arguments with InvalidArgumentError naming them', async () => {
    const client = lockClient(env.redis);
    expect(() => client.getLock('')).toThrow(InvalidArgumentError);
    expect(() => client.getLock('a{}b')).toThrow(/hash tag/);
    const lock = client.getLock(uniqueName());
    await expect(lock.tryLock(1, 'fortnights' as 'ms')).rejects.toThrow(/unknown time unit/);
    await expect(lock.tryLock(Number.NaN, 1, 's')).rejects.toThrow(/waitTime/);
    await expect(lock.tryLock(1, 0, 's')).rejects.toThrow(/leaseTime/);
    await expect(lock.tryLock(1, 5 as unknown as 's')).rejects.toThrow(/unit/);
    await expect(lock.lock(Number.NaN, 's')).rejects.toThrow(/leaseTime.*number/);
    // A lease PEXPIRE cannot take is refused before anything is sent: no key left without a TTL.
    await expect(lock.tryLock(0, Number.MAX_SAFE_INTEGER, 'hours')).rejects.toThrow(InvalidArgumentError);
    await expect(lock.tryLock(0, 1e20, 's')).rejects.toThrow(/leaseTime.*at most/);
    // Units are looked up as own properties only.
    await expect(lock.tryLock(1, 'toString' as 's')).rejects.toThrow(/unknown time unit/);
    await expect(lock.tryLock(1, 5, '__proto__' as 's')).rejects.toThrow(/unknown time unit/);
    // Options objects: their type, their unit even without a time, their signal.
    await expect(lock.acquire('100' as never)).rejects.toThrow(/options.*got string/);
    await expect(lock.acquire(null as never)).rejects.toThrow(/options.*got null/);
    await expect(lock.acquire({ unit: 'bogus' as 's' })).rejects.toThrow(/unknown time unit/);
    await expect(lock.acquire({ signal: 'x' as never })).rejects.toThrow(/signal.*AbortSignal/);
    await expect(client.getSemaphore(uniqueName()).acquire('2' as never)).rejects.toThrow(InvalidArgumentError);
    await expect(client.withLock(lock.name, 42 as never)).rejects.toThrow(/fn.*function/);
    expect(await lock.isLocked()).toBe(false);
  });
});
