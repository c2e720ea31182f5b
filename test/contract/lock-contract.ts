/**
 * The lock contract: RLock's behaviours, run against every lock variant of `VARIANTS` on a topology.
 * Reentry is exercised inside explicit contexts (`runInContext`) and through handles; two owners are two
 * clients or two contexts.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it } from '@jest/globals';
import { IllegalMonitorStateError, WrongTypeError, type LockClient, type LockHandle, type LockLostEvent, type RLock } from '../../src/index.js';
import type { Topology } from '../shared/topology.js';
import { atMost, sleep, uniqueName, waitUntil } from '../support/helpers.js';
import { stallTolerant } from '../support/stalls.js';
import { expectWokenByMessage, recordAcquisitions } from '../support/wakes.js';
import { VARIANTS, type LockVariant } from './variants.js';

/** A name of one test's own, with a hash tag: every key and channel of it is in one slot. */
const newName = (): string => `contract:{${uniqueName()}}`;

/** Script calls (EVALSHA, EVAL, FCALL, FCALL_RO) served so far by the node of `key`'s slot. */
async function scriptCalls(topology: Topology, key: string): Promise<number> {
  const info = String(await topology.command(key, ['INFO', 'commandstats']));
  const calls = (command: string): number => Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return calls('evalsha') + calls('eval') + calls('fcall') + calls('fcall_ro');
}

/** Acquire attempts served so far by the node of `key`'s slot: script calls, and `SET`s for a plain variant (its attempt is a `SET`). */
async function attemptCalls(topology: Topology, key: string, v: LockVariant): Promise<number> {
  const scripts = await scriptCalls(topology, key);
  if (!v.plain) return scripts;
  const info = String(await topology.command(key, ['INFO', 'commandstats']));
  return scripts + Number(/^cmdstat_set:calls=(\d+)/m.exec(info)?.[1] ?? 0);
}

/** `owner`'s hold count in the lock key as Redis keeps it ('1' or null for a plain variant's string), as `HGET` answers. */
async function holdOf(redis: Topology['redis'], key: string, owner: string, v: LockVariant): Promise<string | null | undefined> {
  if (!v.plain) return redis.hGet(key, owner);
  return (await redis.get(key)) === owner ? '1' : null;
}

/** The keys of `name` left in Redis, but a fencing counter (kept on purpose). */
async function leftOf(topology: Topology, name: string, key: string): Promise<string[]> {
  const tag = name.slice(name.indexOf('{'));
  return (await topology.keys(`*${tag}*`, key)).filter((k) => !k.includes('relock:fence:'));
}

/** Each of `keys` with its type and contents (a test's failure message). */
async function describeKeys(topology: Topology, keys: string[]): Promise<string[]> {
  const read: Record<string, (key: string) => string[]> = {
    hash: (k) => ['HGETALL', k],
    list: (k) => ['LRANGE', k, '0', '-1'],
    zset: (k) => ['ZRANGE', k, '0', '-1', 'WITHSCORES'],
    string: (k) => ['GET', k],
  };
  return Promise.all(
    keys.map(async (k) => {
      const type = String(await topology.command(k, ['TYPE', k]));
      const [time] = (await topology.command(k, ['TIME'])) as string[];
      const contents = read[type] ? await topology.command(k, read[type](k)) : undefined;
      return `${k} (${type}, server time ${time} s): ${JSON.stringify(contents)}`;
    }),
  );
}

/** A name held by another client through `lock` (a 10 s lease), and a client of its own for the test. */
async function contended(t: Topology, lock: (client: LockClient, name: string) => RLock): Promise<{ c: LockClient; name: string; key: string; held: LockHandle }> {
  const name = newName();
  const holder = lock(t.client(), name);
  return { c: t.client(), name, key: holder.key, held: await holder.acquire({ leaseTime: 10_000 , unit: 'ms' }) };
}

/** Registers the contract suite of every variant. */
export function lockContractTests(topology: () => Topology): void {
  for (const variant of VARIANTS) {
    describe(`${variant.name} contract`, () => contract(topology, variant));
  }
}

function contract(topology: () => Topology, v: LockVariant): void {
  const rival = v.rival ?? v.of;

  if (v.plain) {
    it('does not reenter: a second acquisition by the holding context waits like any other owner', async () => {
      const { client, redis } = topology();
      const c = client();
      const lock = v.of(c, newName());
      await c.runInContext(async () => {
        expect(await lock.tryLock(0, 5000, 'ms')).toBe(true);
        expect(await lock.tryLock(0, 1000, 'ms')).toBe(false);
        expect(await lock.tryLock(300, 1000, 'ms')).toBe(false);
        expect(await lock.getHoldCount()).toBe(1);
        expect(await redis.pTTL(lock.key)).toBeGreaterThan(3000);
        await lock.unlock();
        await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
      });
      expect(await redis.exists(lock.key)).toBe(0);
    });
  } else {
    it('reenters inside a context; a reentry raises the TTL to its lease and never lowers it', async () => {
      const { client, redis } = topology();
      const c = client();
      const lock = v.of(c, newName());
      await c.runInContext(async () => {
        expect(await lock.tryLock(0, 5000, 'ms')).toBe(true);
        expect(await lock.tryLock(0, 1000, 'ms')).toBe(true);
        expect(await lock.getHoldCount()).toBe(2);
        expect(await redis.pTTL(lock.key)).toBeGreaterThan(4000);
        expect(await lock.tryLock(0, 9000, 'ms')).toBe(true);
        expect(await lock.getHoldCount()).toBe(3);
        expect(await redis.pTTL(lock.key)).toBeGreaterThan(8000);
        for (let i = 0; i < 3; i++) await lock.unlock();
      });
      expect(await redis.exists(lock.key)).toBe(0);
    });
  }

  it('only the holder unlocks: another owner gets IllegalMonitorStateError and changes nothing', async () => {
    const { client, redis } = topology();
    const c = client();
    const name = newName();
    const held = await v.of(c, name).acquire({ leaseTime: 10_000 , unit: 'ms' });
    const key = v.of(c, name).key;
    const ttl = await redis.pTTL(key);
    await expect(c.runInContext(() => v.of(c, name).unlock())).rejects.toBeInstanceOf(IllegalMonitorStateError);
    await expect(c.runInContext(() => rival(c, name).unlock())).rejects.toBeInstanceOf(IllegalMonitorStateError);
    expect(await holdOf(redis, key, held.owner, v)).toBe('1');
    expect(await redis.pTTL(key)).toBeLessThanOrEqual(ttl);
    await held.release();
    expect(await redis.exists(key)).toBe(0);
  });

  if (!v.shared) {
    it('concurrent owners never hold it together (20 contexts under Promise.all)', async () => {
      const { client } = topology();
      const c = client();
      const name = newName();
      let inside = 0;
      let most = 0;
      await Promise.all(
        Array.from({ length: 20 }, () =>
          c.runInContext(async () => {
            const lock = v.of(c, name);
            expect(await lock.tryLock(20_000, 10_000, 'ms')).toBe(true);
            most = Math.max(most, ++inside);
            await sleep(1);
            inside--;
            await lock.unlock();
          }),
        ),
      );
      expect(most).toBe(1);
      expect(await v.of(c, name).isLocked()).toBe(false);
    });
  }

  if (!v.plain) {
    it('a retried unlock is idempotent on a reentrant hold: after a lost reply, hold count 2 → 1 exactly once, and success', async () => {
      const { client: c, loseReplyTo } = await topology().lossyClient();
      const { redis } = topology();
      const lock = v.of(c, newName());
      await c.runInContext(async () => {
        expect(await lock.tryLock(0, 10_000, 'ms')).toBe(true);
        expect(await lock.tryLock(0, 10_000, 'ms')).toBe(true);
        expect(await lock.getHoldCount()).toBe(2);
        let lost = false;
        void loseReplyTo(lock.key).then(() => (lost = true));
        await lock.unlock();
        expect(lost).toBe(true);
        expect(await lock.getHoldCount()).toBe(1);
        await lock.unlock();
      });
      expect(await redis.exists(lock.key)).toBe(0);
    });
  } else {
    it('a retried unlock after a lost reply succeeds once: the hold is released, no IllegalMonitorStateError', async () => {
      const { client: c, loseReplyTo } = await topology().lossyClient();
      const { redis } = topology();
      const lock = v.of(c, newName());
      await c.runInContext(async () => {
        expect(await lock.tryLock(0, 10_000, 'ms')).toBe(true);
        let lost = false;
        void loseReplyTo(lock.key).then(() => (lost = true));
        await lock.unlock();
        expect(lost).toBe(true);
        expect(await lock.getHoldCount()).toBe(0);
      });
      expect(await redis.exists(lock.key)).toBe(0);
    });
  }

  it('a retried acquire after a lost grant adds no second hold; one unlock frees the key', async () => {
    const { client: c, loseReplyTo } = await topology().lossyClient();
    const { redis } = topology();
    const lock = v.of(c, newName());
    await c.runInContext(async () => {
      let lost = false;
      void loseReplyTo(lock.key).then(() => (lost = true));
      expect(await lock.tryLock(5000, 10_000, 'ms')).toBe(true);
      expect(lost).toBe(true);
      expect(await lock.getHoldCount()).toBe(1);
      await lock.unlock();
    });
    expect(await redis.exists(lock.key)).toBe(0);
  });

  it('the watchdog keeps a hold past three leases; after the unlock it renews nothing more', async () => {
    const { client, redis } = topology();
    // A lease of 750 ms renewed every 250 ms. A hold is lost by design when a renewal is not answered
    // by its local deadline (the last renewal's send + lease − drift): a stall of the event loop longer
    // than about lease − interval − drift (the renewal's round trip after it included) loses it. With the
    // 450 ms lease this test had, that was about 290 ms: the Node 24 leg of CI (2 cores shared by two jest
    // workers and the redis-servers of both) lost a SpinLock hold once. Measured on a 2-core machine (issue
    // 28): an injected 282 ms stall lost the 450 ms hold (renewal-failed, 601 ms after the acquire), and
    // under load (two busy loops beside other work, load average 10–13) the loop stalled by itself up to
    // 252 ms (Node 24; 76 holds); a 480 ms stall keeps the 750 ms hold. The lost events (reason, cause) and
    // the loop's longest stall are printed when it fails.
    // A round whose loop stalled longer than the budget (stallTolerant, STALL_BUDGET_MS) may lose the hold
    // by design and says nothing about the watchdog (CI's Node 24 leg once stalled 675 ms: GLIDE, FencedLock,
    // renewal-late): such a round is repeated, up to 3 rounds; a loss in a round whose loop stayed within
    // the budget fails.
    const c = client({ lockWatchdogTimeout: 750 });
    const lost: LockLostEvent[] = [];
    c.on('lockLost', (event) => lost.push(event));
    await stallTolerant(async (_, slowReply) => {
      lost.length = 0;
      const lock = v.of(c, newName());
      // A grant answered later than the lease (a starved redis-server; the whole suite on Node 24 in a
      // clean-clone run, 2026-12-07: renewal-late while the loop stalled 12 ms) is lost by design.
      const sentAt = performance.now();
      const handle = await lock.acquire();
      slowReply(performance.now() - sentAt);
      try {
        await sleep(2400); // the time under test: more than three leases
        expect(lost.map((e) => `${e.reason}: ${String((e.error.cause as Error | undefined)?.message)}`)).toEqual([]);
        expect(await holdOf(redis, lock.key, handle.owner, v)).toBe('1');
        expect(handle.signal.aborted).toBe(false);
      } catch (error) {
        await handle.release().catch(() => undefined);
        throw error;
      }
      await handle.release();
      expect(c.stats().watchdogHolds).toBe(0);
      const calls = c.stats().renewalCalls;
      await sleep(750); // the time under test: three renewal periods with nothing to renew
      expect(c.stats().renewalCalls).toBe(calls);
      expect(lost).toEqual([]);
      expect(await redis.exists(lock.key)).toBe(0);
    });
  });

  it("renewal checks the owner: after A's key is deleted and B takes the lock, A's next renewal reports lockLost within one interval and leaves B's TTL alone", async () => {
    const { client, redis } = topology();
    // 1,200 ms (a renewal every 400 ms): with 600 ms, A's hold was lost before its first renewal twice in
    // loaded Cluster runs on 2 cores (the wait below timed out). A round in which A lost its hold before B
    // took the lock (`renewal-late`: a renewal's reply came after A's local deadline, seen once more in a
    // loaded CI run on an ioredis 6 Cluster) says nothing of the owner check: it is repeated, up to 3 rounds.
    const watchdogMs = 1200;
    for (let round = 1; ; round++) {
      const a = client({ lockWatchdogTimeout: watchdogMs });
      const b = client();
      const name = newName();
      const losses: string[] = [];
      a.on('lockLost', (event) => losses.push(`${event.reason}: ${String((event.error.cause as Error | undefined)?.message)}`));
      const lost = new Promise<LockLostEvent>((resolve) => a.once('lockLost', resolve));
      const heldByA = await v.of(a, name).acquire();
      const key = v.of(a, name).key;
      // Start right after one of A's renewals went through (its TTL jumps back up), so that the next one
      // runs only after B took the lock.
      let last = await redis.pTTL(key);
      const renewed = await waitUntil(
        async () => {
          const now = await redis.pTTL(key);
          const up = now > last + 30;
          last = now;
          return up;
        },
        5000,
        5,
        "A's renewal",
      ).then(
        () => true,
        (error: unknown) => {
          if (losses.length === 0 || round >= 3) throw new Error(`${(error as Error).message}; A's losses before B took the lock: ${JSON.stringify(losses)}`);
          return false;
        },
      );
      if (!renewed || losses.length > 0) {
        if (round >= 3) throw new Error(`A lost its hold before B took the lock in 3 rounds: ${JSON.stringify(losses)}`);
        await a.shutdown();
        continue;
      }
      await redis.del(key);
      const heldByB = await v.of(b, name).acquire({ waitTime: 0, leaseTime: 10_000 , unit: 'ms' });
      const tookAt = performance.now();
      const ttlAtTake = await redis.pTTL(key);
      // Waited for up to 5 s, the bound checked after: a loop that stalled past 200 ms meanwhile delays
      // A's next renewal by as much (a whole-suite run on 2 cores once missed the bound so); that round
      // is repeated, up to 3 rounds. Without the owner check no lockLost ever comes.
      const lag = monitorEventLoopDelay({ resolution: 5 });
      lag.enable();
      const event = await atMost(lost, 5000);
      const elapsed = performance.now() - tookAt;
      lag.disable();
      // A `renewal-late` loss here (A's renewal after B took the lock answered after A's local deadline,
      // 800 ms on: the whole suite on Node 24 saw it once, 2026-12-06 night) is the same stall seen from the
      // other side, and says nothing of the owner check either: repeated too. Without the owner check a
      // round that does not stall gets no lockLost at all, so the third round still fails.
      const late = event?.reason === 'renewal-late';
      if (event && round < 3 && (late || (elapsed >= watchdogMs / 3 + 500 && lag.max / 1e6 > 200))) {
        await heldByB.release();
        await a.shutdown();
        continue;
      }
      expect(event).toMatchObject({ name, reason: 'expired' });
      expect(elapsed).toBeLessThan(watchdogMs / 3 + 500);
      expect(heldByA.signal.aborted).toBe(true);
      const ttl = await redis.pTTL(key);
      const since = performance.now() - tookAt;
      expect(ttl).toBeLessThanOrEqual(ttlAtTake);
      expect(ttl).toBeGreaterThan(ttlAtTake - since - 100);
      expect(await holdOf(redis, key, heldByB.owner, v)).toBe('1');
      await heldByB.release();
      return;
    }
  });

  if (!v.polls) {
    it('a waiter parked on its channel wakes by the unlock message within milliseconds', async () => {
      const t = topology();
      const { c: waiterClient, name, key, held } = await contended(t, rival);
      const before = await attemptCalls(t, key, v);
      const acquisitions = recordAcquisitions();
      try {
        const waiting = v.of(waiterClient, name).acquire({ waitTime: 5000, leaseTime: 10_000 , unit: 'ms' });
        // Parked: subscribed, and the attempt made after subscribing answered busy.
        await waitUntil(async () => waiterClient.stats().subscriptions === 1 && (await attemptCalls(t, key, v)) - before >= 2, 5000, 5, 'the waiter to park');
        await held.release();
        const releasedAt = performance.now();
        const handle = await waiting;
        // Woken by the message, not by its timer, which would come at the end of the 5 s wait (the holder's
        // lease runs 10 s); the bound is MESSAGE_WAKE_MS (250 ms was missed by 4 ms in CI's whole suite).
        expectWokenByMessage(acquisitions, name, performance.now() - releasedAt);
        await handle.release();
      } finally {
        acquisitions.stop();
      }
      await waitUntil(() => waiterClient.stats().subscriptions === 0, 2000, 5, 'the waiter to leave its channel');
    });
  }

  it("a waiter gets the lock at the holder's lease end when no message comes (TTL fallback)", async () => {
    const { client, redis } = topology();
    const name = newName();
    // The waiter's client is connected first: a fresh Cluster client's first command waits for its
    // connections and slot map, which under load took longer than the whole lease (the attempt then went
    // out after the lease end and was granted at once, 583 ms "late", with no fallback involved).
    const waiter = v.of(client(), name);
    await waiter.isLocked();
    await rival(client(), name).acquire({ leaseTime: 400 , unit: 'ms' });
    const expiresAt = performance.now() + (await redis.pTTL(waiter.key));
    // The bound is relock's: on a loaded machine the event loop itself can run the fallback timer (or
    // the reply of the attempt it starts) late, and that lag, measured over the wait, is added to it (as
    // in test/wait-bound.test.ts).
    const lag = monitorEventLoopDelay({ resolution: 5 });
    lag.enable();
    const acquisitions = recordAcquisitions();
    const handle = await waiter.acquire({ waitTime: 5000, leaseTime: 10_000 , unit: 'ms' });
    const late = performance.now() - expiresAt;
    lag.disable();
    acquisitions.stop();
    // Printed when it fails: how late, the loop's lag, and the attempts (a refused first one, then the timer's).
    const seen = { late: Math.round(late), lagMaxMs: Math.round(lag.max / 1e6), calls: acquisitions.calls(name).map(({ attempts, wokenBy }) => ({ attempts, wokenBy })) };
    // (Under load the first attempt can itself come after the lease end: one attempt, granted, not late.)
    expect({ ...seen, early: late <= -20, tooLate: late >= 300 + lag.max / 1e6 }).toEqual({ ...seen, early: false, tooLate: false });
    await handle.release();
  });

  it("an aborted wait rejects with the signal's reason (default or given) and leaves no subscription, queue entry or hold", async () => {
    const t = topology();
    const { c: waiterClient, name, key, held } = await contended(t, rival);
    for (const reason of [undefined, new Error('caller gave up')]) {
      const before = await attemptCalls(t, key, v);
      const controller = new AbortController();
      const waiting = v.of(waiterClient, name).acquire({ signal: controller.signal });
      // Waiting: a second attempt (after subscribing, or the spin lock's next poll), or one attempt on a
      // channel that still lingered from the previous wait (no message came: the first answer stands).
      await waitUntil(async () => {
        const calls = (await attemptCalls(t, key, v)) - before;
        return calls >= 2 || (calls >= 1 && waiterClient.stats().subscriptions === 1);
      }, 5000, 5, 'the waiter to wait');
      controller.abort(reason);
      await expect(waiting).rejects.toBe(controller.signal.reason);
      await waitUntil(() => waiterClient.stats().subscriptions === 0, 2000, 5, 'the waiter to leave its channel');
      expect(waiterClient.stats().watchdogHolds).toBe(0);
    }
    await held.release();
    const gone = await waitUntil(async () => (await leftOf(t, name, key)).length === 0, 2000, 10, 'every key of the name to be gone').catch(() => false);
    // Printed when it fails: each key left, with what it holds.
    expect(gone ? [] : await describeKeys(t, await leftOf(t, name, key))).toEqual([]);
  });

  it('tryLock() and a wait time of 0 make exactly one attempt each and subscribe to nothing', async () => {
    const t = topology();
    const { c, name, key, held } = await contended(t, rival);
    const keys = (await leftOf(t, name, key)).sort();
    const before = await attemptCalls(t, key, v);
    expect(await c.runInContext(() => v.of(c, name).tryLock())).toBe(false);
    expect(await c.runInContext(() => v.of(c, name).tryLock(0, 5, 'seconds'))).toBe(false);
    expect((await attemptCalls(t, key, v)) - before).toBe(2);
    expect(c.stats().subscriptions).toBe(0);
    expect((await leftOf(t, name, key)).sort()).toEqual(keys);
    await held.release();
  });

  it('a key that holds other data fails with WrongTypeError naming the key and the kind asked, and is left as it was', async () => {
    const { client, redis } = topology();
    const c = client();
    const asString = v.of(c, newName());
    await redis.set(asString.key, 'application data');
    const error = await c.runInContext(() => asString.tryLock()).catch((e: unknown) => e);
    if (v.plain) {
      // An unmarked string: its value reads as another owner's hold.
      expect(error).toBe(false);
    } else {
      expect(error).toBeInstanceOf(WrongTypeError);
      expect(error).toMatchObject({ key: asString.key, actualType: 'string', foundKind: undefined, askedKind: v.kind });
    }
    expect(await redis.get(asString.key)).toBe('application data');
    const asHash = v.of(c, newName());
    await redis.hSet(asHash.key, 'field', 'value');
    const hashError = await c.runInContext(() => asHash.acquire({ waitTime: 1000 , unit: 'ms' })).catch((e: unknown) => e);
    expect(hashError).toMatchObject({ key: asHash.key, actualType: 'hash', foundKind: undefined, askedKind: v.kind });
    expect(await redis.hGetAll(asHash.key)).toEqual({ field: 'value' });
    await redis.del(asString.key);
    await redis.del(asHash.key);
  });
}
