/**
 * What the lock contract (test/contract/lock-contract.ts, variant NonReentrantLock) does not cover: the
 * plain string in Redis and the commands an acquisition sends, one kind per name against the hash locks,
 * the watchdog's batch, force unlock.
 */
import { describe, expect, it } from '@jest/globals';
import { IllegalMonitorStateError, runInContext, WrongTypeError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { commandCalls, lockClient, sleep, uniqueName } from '../support/helpers.js';

const env = useRedis();

/** Script calls served so far (EVALSHA, EVAL, FCALL). */
async function scriptCalls(): Promise<number> {
  const counts = await Promise.all(['evalsha', 'eval', 'fcall'].map((c) => commandCalls(env.redis, c)));
  return counts.reduce((a, b) => a + b, 0);
}

describe('NonReentrantLock', () => {
  it('is a plain string holding its owner, with the lease as TTL; an acquisition is one SET and no script', async () => {
    const client = lockClient(env.redis);
    const lock = client.getNonReentrantLock(uniqueName());
    const scripts = await scriptCalls();
    const sets = await commandCalls(env.redis, 'set');
    const handle = await lock.acquire({ leaseMs: 5000 });
    expect(await scriptCalls()).toBe(scripts);
    expect((await commandCalls(env.redis, 'set')) - sets).toBe(1);
    expect(await env.redis.type(lock.key)).toBe('string');
    expect(await env.redis.get(lock.key)).toBe(handle.owner);
    expect(await env.redis.pTTL(lock.key)).toBeGreaterThan(4000);
    expect(await lock.isLocked()).toBe(true);
    expect(await lock.remainTimeToLive()).toBeGreaterThan(4000);
    await handle.release();
    expect(await env.redis.exists(lock.key)).toBe(0);
    expect(await lock.remainTimeToLive()).toBe(-2);
  });

  it("release compares the owner: another owner's unlock throws IllegalMonitorStateError and leaves the string; a holder past its lease leaves the next holder alone", () =>
    runInContext(async () => {
      const client = lockClient(env.redis);
      const name = uniqueName();
      const lock = client.getNonReentrantLock(name);
      expect(await lock.tryLock(0, 150, 'ms')).toBe(true);
      const other = lockClient(env.redis);
      await expect(other.runInContext(() => other.getNonReentrantLock(name).unlock())).rejects.toBeInstanceOf(IllegalMonitorStateError);
      expect(await env.redis.exists(lock.key)).toBe(1);
      await sleep(200); // the time under test: the lease runs out
      const next = await other.getNonReentrantLock(name).acquire({ waitMs: 0, leaseMs: 5000 });
      await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
      expect(await env.redis.get(lock.key)).toBe(next.owner);
      await next.release();
    }));

  it("a context whose hold's lease ran out acquires again: the ended hold is forgotten, not waited for", () =>
    runInContext(async () => {
      const client = lockClient(env.redis);
      const lock = client.getNonReentrantLock(uniqueName());
      expect(await lock.tryLock(0, 150, 'ms')).toBe(true);
      expect(await lock.tryLock()).toBe(false);
      await sleep(200); // the time under test: the lease runs out
      expect(await lock.tryLock(0, 5000, 'ms')).toBe(true);
      expect(await lock.getHoldCount()).toBe(1);
      await lock.unlock();
      expect(await env.redis.exists(lock.key)).toBe(0);
    }));

  it('one kind per name against the hash locks: WrongTypeError both ways, nothing written', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const held = await client.getLock(name).acquire({ leaseMs: 5000 });
    await expect(client.getNonReentrantLock(name).acquire({ waitMs: 0 })).rejects.toMatchObject({ constructor: WrongTypeError, foundKind: 'lock', askedKind: 'non-reentrant-lock' });
    await expect(client.getNonReentrantLock(name).forceUnlock()).rejects.toBeInstanceOf(WrongTypeError);
    expect(await env.redis.hGet(client.getLock(name).key, held.owner)).toBe('1');
    await held.release();
    const plain = await client.getNonReentrantLock(name).acquire({ leaseMs: 5000 });
    await expect(client.runInContext(() => client.getLock(name).tryLock())).rejects.toMatchObject({ constructor: WrongTypeError, actualType: 'string', askedKind: 'lock' });
    expect(await env.redis.get(client.getNonReentrantLock(name).key)).toBe(plain.owner);
    await plain.release();
  });

  it('the watchdog renews every held lock of a client in one batch call (compare-and-PEXPIRE), and stops at the release', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 600 });
    const locks = [0, 1, 2].map(() => client.getNonReentrantLock(`{nr}${uniqueName()}`));
    const handles = await Promise.all(locks.map((l) => l.acquire()));
    const before = client.stats().renewalCalls;
    await sleep(450); // the time under test: two renewal periods (200 ms)
    const calls = client.stats().renewalCalls - before;
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(3);
    for (const [i, lock] of locks.entries()) expect(await env.redis.get(lock.key)).toBe(handles[i]!.owner);
    expect(await env.redis.pTTL(locks[0]!.key)).toBeGreaterThan(300);
    await Promise.all(handles.map((h) => h.release()));
    expect(client.stats().watchdogHolds).toBe(0);
  });

  it('forceUnlock deletes the string whoever holds it and wakes a waiter', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getNonReentrantLock(name).acquire({ leaseMs: 30_000 });
    const waiting = client.getNonReentrantLock(name).acquire({ waitMs: 10_000, leaseMs: 5000 });
    await sleep(50); // let the waiter park (a late waiter is granted at once: the assertion holds either way)
    const startedAt = performance.now();
    expect(await client.getNonReentrantLock(name).forceUnlock()).toBe(true);
    const handle = await waiting;
    expect(performance.now() - startedAt).toBeLessThan(1000);
    await handle.release();
    expect(await client.getNonReentrantLock(name).forceUnlock()).toBe(false);
  });
});
