/**
 * What the lock contract (test/contract/lock-contract.ts, variant NonReentrantLock) does not cover: the
 * plain string in Redis and the commands an acquisition sends, one kind per name against the hash locks,
 * the watchdog's batch, force unlock.
 */
import { describe, expect, it } from '@jest/globals';
import { IllegalMonitorStateError, runInContext, WrongTypeError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { callsSince, commandCalls, lockClient, sleep, subscribers, uniqueName } from '../support/helpers.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';
import { recordAcquisitions } from '../support/wakes.js';
import { useProxied } from '../lock/protocol/engine.js';

const env = useRedis();
const proxied = useProxied(env);

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

  it("a context that holds it asks again and that attempt's reply is lost: the retry still finds it busy (its own hold is not adopted as that attempt's grant)", () =>
    runInContext(async () => {
      const { proxy, client } = await proxied();
      const lock = client.getNonReentrantLock(uniqueName());
      expect(await lock.tryLock(0, 30, 'seconds')).toBe(true);
      // The second attempt reads the holder (the STATE script); its reply is lost, so the retry carries a
      // guard. Were it sent as a `SET NX GET` like a first acquisition, the guarded retry would find this
      // owner in the key and take it for the lost attempt's grant.
      const lost = proxy.loseReply({ match: lock.key });
      expect(await lock.tryLock(300, 'ms')).toBe(false); // a wait time: its attempts are retried after a lost reply
      await lost;
      expect(proxy.repliesLost).toBe(1);
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
    // The parked waiter (its attempt after subscribing ran: two SET NX calls) is woken by forceUnlock's message
    // (recorded: `wokenBy: 'message'`) within ms, against a bound of 1,000 ms: a round that failed while
    // this process's loop or Redis stalled past 400 ms (stallTolerant with probeReplies) is repeated, up to
    // 3 rounds, on a fresh name, its holds deleted; without the message the waiter sleeps on the holder's
    // TTL to the end of its 10 s wait, every round.
    await stallTolerant(async (_, slowReply) => {
      const name = uniqueName();
      await client.getNonReentrantLock(name).acquire({ leaseMs: 30_000 });
      const acquisitions = recordAcquisitions();
      let stop = (): void => {};
      let waiting: Promise<{ release(): Promise<void> }> | undefined;
      try {
        const base = await commandCalls(env.redis, 'set');
        waiting = client.getNonReentrantLock(name).acquire({ waitMs: 10_000, leaseMs: 5000 });
        await subscribers(env.redis, client.getNonReentrantLock(name).channel);
        await callsSince(env.redis, 'set', base, 2);
        stop = probeReplies(env.redis, slowReply);
        const startedAt = performance.now();
        expect(await client.getNonReentrantLock(name).forceUnlock()).toBe(true);
        const handle = await waiting;
        const took = performance.now() - startedAt;
        stop();
        expect({ tookMs: took < 1000 ? '< 1000' : Math.round(took), calls: acquisitions.of(name) }).toEqual({ tookMs: '< 1000', calls: [{ outcome: 'acquired', wokenBy: 'message' }] });
        await handle.release();
        expect(await client.getNonReentrantLock(name).forceUnlock()).toBe(false);
      } finally {
        stop();
        acquisitions.stop();
        await waiting?.catch(() => undefined);
        await env.redis.del(client.getNonReentrantLock(name).key);
      }
    }, 400);
  });
});
