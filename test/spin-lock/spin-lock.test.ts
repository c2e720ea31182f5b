import { describe, expect, it } from '@jest/globals';
import { ExponentialBackoff, resolveBackoff } from '../../src/backoff.js';
import { ClientClosedError, IllegalMonitorStateError, InvalidArgumentError, runInContext, WrongTypeError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';
import { activeTimers, commandCalls, connect, lockClient, numsub, sleep, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis();

/** Clients of this server connected for pub/sub (a subscriber connection relock opened). */
async function pubsubClients(): Promise<number> {
  const list = (await env.redis.sendCommand(['CLIENT', 'LIST', 'TYPE', 'pubsub'])) as string;
  return list.split('\n').filter((line) => line.trim().length > 0).length;
}

describe('SpinLock', () => {
  it('is the RLock hash of its own kind: reentrant per owner, exclusive between owners; an RLock on its name (and it on an RLock\'s) fails with WrongTypeError', () => runInContext(async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const lock = client.getSpinLock(name);
    expect(await lock.tryLock(0, 5, 'seconds')).toBe(true);
    expect(await lock.tryLock()).toBe(true);
    expect(await lock.getHoldCount()).toBe(2);
    const [owner] = Object.keys(await env.redis.hGetAll(lock.key));
    expect(await env.redis.hGet(lock.key, owner!)).toBe('2');

    expect(await env.redis.hGet(lock.key, 'kind')).toBe('spin-lock');
    const other = lockClient(env.redis);
    expect(await other.getSpinLock(name).tryLock(50, 'ms')).toBe(false);
    await expect(other.getLock(name).tryLock()).rejects.toMatchObject({ foundKind: 'spin-lock', askedKind: 'lock' });
    await lock.unlock();
    expect(await lock.isLocked()).toBe(true);
    await lock.unlock();
    expect(await lock.isLocked()).toBe(false);
    await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);

    const rlock = client.getLock(name);
    await rlock.lock();
    await expect(other.getSpinLock(name).tryLock()).rejects.toBeInstanceOf(WrongTypeError);
    await rlock.unlock();
  }));

  it('an unlock after the lease expired fails at once and leaves the new holder alone; a name holding a string fails with WrongTypeError (known failures 1–3)', async () => {
    // The refused unlock is one round trip (one EVALSHA, counted), against a bound of 100 ms: a round that
    // failed while this process's loop or Redis stalled past 80 ms (stallTolerant with probeReplies) is
    // repeated, up to 3 rounds, on a fresh name, B's hold released; an unlock that waited or retried before
    // its refusal is late (or sends more than one call) every round.
    await stallTolerant(async (_, slowReply) => {
      const name = uniqueName();
      const a = lockClient(env.redis).getSpinLock(name);
      expect(await a.tryLock(0, 100, 'ms')).toBe(true);
      const b = lockClient(env.redis).getSpinLock(name);
      expect(await b.tryLock(2, 5, 'seconds')).toBe(true);
      const stop = probeReplies(env.redis, slowReply);
      try {
        const before = await commandCalls(env.redis, 'evalsha');
        const started = performance.now();
        await expect(a.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
        const took = performance.now() - started;
        stop();
        expect({ tookMs: took < 100 ? '< 100' : Math.round(took), calls: (await commandCalls(env.redis, 'evalsha')) - before }).toEqual({ tookMs: '< 100', calls: 1 });
        expect(await b.getHoldCount()).toBe(1);
      } finally {
        stop();
        await b.unlock().catch(() => {});
      }
    }, 80);

    const taken = uniqueName();
    await env.redis.set(taken, 'application data');
    await expect(lockClient(env.redis).getSpinLock(taken).tryLock(1, 'seconds')).rejects.toBeInstanceOf(WrongTypeError);
  });

  it('keeps mutual exclusion for a read-modify-write counter across clients and contexts', async () => {
    const name = uniqueName();
    const key = uniqueName('counter');
    const clients = [lockClient(env.redis), lockClient(env.redis), lockClient(env.redis)];
    let inside = 0;
    let overlaps = 0;
    await Promise.all(
      clients.flatMap((client) =>
        [0, 1].map(() =>
          runInContext(async () => {
            for (let i = 0; i < 25; i++) {
              const lock = client.getSpinLock(name);
              await lock.lock();
              if (++inside > 1) overlaps++;
              const value = Number((await env.redis.get(key)) ?? 0);
              await new Promise((resolve) => setImmediate(resolve));
              await env.redis.set(key, String(value + 1));
              inside--;
              await lock.unlock();
            }
          }),
        ),
      ),
    );
    expect(overlaps).toBe(0);
    expect(await env.redis.get(key)).toBe(String(3 * 2 * 25));
  });

  it('uses the watchdog without a lease and honours an explicit lease', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 600 });
    const lock = client.getSpinLock(uniqueName());
    await lock.lock();
    expect(client.stats().watchdogHolds).toBe(1);
    await sleep(900);
    expect(await lock.isHeldByCurrentContext()).toBe(true);
    await lock.unlock();
    expect(client.stats().watchdogHolds).toBe(0);

    expect(await lock.tryLock(0, 200, 'ms')).toBe(true);
    expect(client.stats().watchdogHolds).toBe(0);
    expect(await lock.remainTimeToLive()).toBeLessThanOrEqual(200);
  });

  it('subscribes to nothing, opens no subscriber connection, and its unlock and forceUnlock publish nothing', async () => {
    const holderClient = lockClient(env.redis);
    const waiterClient = lockClient(env.redis);
    const name = uniqueName();
    const holder = holderClient.getSpinLock(name);
    const subscribesBefore = await commandCalls(env.redis, 'subscribe');
    const publishesBefore = await commandCalls(env.redis, 'publish');
    const pubsubBefore = await pubsubClients();

    await holder.lock();
    const waiting = waiterClient.getSpinLock(name).tryLock(3, 'seconds');
    await sleep(150);
    expect(waiterClient.stats().subscriptions).toBe(0);
    expect(await numsub(env.redis, holder.channel)).toBe(0);
    expect(await pubsubClients()).toBe(pubsubBefore);
    await holder.unlock();
    expect(await waiting).toBe(true);
    await waiterClient.getSpinLock(name).forceUnlock().catch(() => false);
    expect(await holder.isLocked()).toBe(false);

    expect(await commandCalls(env.redis, 'subscribe')).toBe(subscribesBefore);
    expect(await commandCalls(env.redis, 'publish')).toBe(publishesBefore);
    expect(await pubsubClients()).toBe(pubsubBefore);

    // The RLock on another name still publishes through the same (shared) unlock script.
    const rlock = holderClient.getLock(uniqueName());
    await rlock.lock();
    await rlock.unlock();
    expect(await commandCalls(env.redis, 'publish')).toBe(publishesBefore + 1);
  });

  it('a waiter gets in right after the holder\'s lease ends, even with a backoff far longer (capped by the TTL)', async () => {
    const client = lockClient(env.redis);
    // Bound 400 ms past the lease's end (the design: ~0): a round that failed while this process's loop or
    // Redis stalled past 300 ms (stallTolerant with probeReplies) is repeated, up to 3 rounds, on a fresh
    // name; a pause not capped by the holder's TTL sleeps the 5 s backoff every round.
    await stallTolerant(async (_, slowReply) => {
      const name = uniqueName();
      expect(await client.getSpinLock(name).tryLock(0, 300, 'ms')).toBe(true);
      const stop = probeReplies(env.redis, slowReply);
      const expiresAt = performance.now() + (await env.redis.pTTL(client.getSpinLock(name).key));
      const waiter = client.getSpinLock(name, { initialDelay: 5000, maxDelay: 5000 });
      const waiting = waiter.tryLock(10, 'seconds');
      try {
        expect(await waiting).toBe(true);
        const late = performance.now() - expiresAt;
        stop();
        expect(late).toBeGreaterThanOrEqual(-5);
        expect(late).toBeLessThan(400); // the backoff alone would sleep 5 s
      } finally {
        stop();
        if (await waiting.catch(() => false)) await waiter.unlock();
      }
    }, 300);
  });

  it('paces its attempts with the backoff: about 15 attempts in a 1 s wait with the defaults, 5 with a constant 200 ms, then the tail at the deadline', async () => {
    // Attempts are the EVALSHA calls that name this lock's key, at their MONITOR (server) times: the
    // server-wide count also holds the watchdog renewals of the clients earlier tests of this file left
    // holding, which renew every 10 s and once put 8 calls in the constant pacing's 1 s window. The paced
    // attempts are those before the wait's last 10 ms; the pause before the tail is capped by the time
    // left, a fraction of a ms that Node's millisecond timers may cut short (setTimeout(1.5) fired after
    // 0.02 ms, measured), so the last ms or two may hold a few attempts: once 8 in all with the constant
    // pacing (a clean-clone rehearsal, Node 24). The tail is bounded by time, not by count.
    const client = lockClient(env.redis);
    const name = uniqueName();
    const lock = client.getSpinLock(name);
    await lock.lock();
    const monitor = await connect(env.server.url);
    const attempts: number[] = [];
    const marks = new Set<string>();
    await monitor.monitor((line) => {
      if (/"evalsha"/i.test(line) && line.includes(`"${lock.key}"`)) attempts.push(Number.parseFloat(line) * 1000);
      const mark = /"echo" "(mark:[^"]+)"/i.exec(line);
      if (mark) marks.add(mark[1]!);
    });
    const paced = async (options?: Parameters<typeof client.getSpinLock>[1]): Promise<{ paced: number; tail: number; lastAfterMs: number; times: string }> => {
      const before = attempts.length;
      expect(await client.getSpinLock(name, options).tryLock(1000, 'ms')).toBe(false);
      // Sent after the last attempt's reply, so MONITOR shows it after that attempt: once it is seen,
      // every attempt is counted.
      const mark = uniqueName('mark');
      await env.redis.sendCommand(['ECHO', mark]);
      await waitUntil(() => marks.has(mark), 2000, 5, 'the mark on MONITOR');
      const after = attempts.slice(before).map((at, _, all) => at - all[0]!);
      return {
        paced: after.filter((ms) => ms < 990).length,
        tail: after.filter((ms) => ms >= 990).length,
        lastAfterMs: Math.round(after.at(-1)!),
        times: after.map((ms) => ms.toFixed(1)).join(', '),
      };
    };
    try {
      const defaults = await paced();
      expect([defaults.paced >= 7 && defaults.paced <= 16, defaults.times]).toEqual([true, defaults.times]);
      const constant = await paced({ initialDelay: 200, maxDelay: 200 });
      // 0, 200, 400, 600 and 800 ms (4 when replies are slow), then at least one attempt at the deadline.
      expect([constant.paced >= 4 && constant.paced <= 5, constant.tail >= 1, constant.times]).toEqual([true, true, constant.times]);
      for (const run of [defaults, constant]) expect([run.lastAfterMs <= 1050, run.times]).toEqual([true, run.times]);
    } finally {
      await monitor.close();
    }
  });

  it('a wait time of 0 makes exactly one attempt', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getSpinLock(name).lock();
    const before = await commandCalls(env.redis, 'evalsha');
    expect(await client.getSpinLock(name).tryLock(0, 5, 's')).toBe(false);
    expect(await client.getSpinLock(name).tryLock()).toBe(false);
    expect((await commandCalls(env.redis, 'evalsha')) - before).toBe(2);
  });

  it('aborting a spinning acquire rejects with the reason and leaves no timer or hold', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getSpinLock(name).lock();
    const timers = activeTimers();
    const controller = new AbortController();
    const waiting = client.getSpinLock(name).acquire({ signal: controller.signal });
    await sleep(50);
    controller.abort(new Error('caller gave up'));
    await expect(waiting).rejects.toThrow('caller gave up');
    await waitUntil(() => activeTimers() <= timers, 1000, 10, 'timers to be cleared');
    expect(client.stats().watchdogHolds).toBe(1);
  });

  it('a spinning waiter rejects with ClientClosedError soon after shutdown', async () => {
    const holder = lockClient(env.redis);
    const name = uniqueName();
    await holder.getSpinLock(name).lock();
    const client = lockClient(env.redis);
    const waiting = client.getSpinLock(name).lock();
    await sleep(300);
    const started = performance.now();
    await client.shutdown();
    await expect(waiting).rejects.toBeInstanceOf(ClientClosedError);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('rejects bad backoff options with InvalidArgumentError naming the option, before anything is sent', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    expect(() => client.getSpinLock(name, { initialDelay: 0 })).toThrow(InvalidArgumentError);
    expect(() => client.getSpinLock(name, { maxDelay: 0.5 })).toThrow(/options\.maxDelay/);
    expect(() => client.getSpinLock(name, { multiplier: 0.5 })).toThrow(/options\.multiplier/);
    expect(() => client.getSpinLock(name, { initialDelay: Number.NaN })).toThrow(/options\.initialDelay/);
    expect(() => client.getSpinLock(name, 'fast' as never)).toThrow(/invalid options/);
    expect(client.getSpinLock(name).backoff).toEqual({ initialDelay: 1, maxDelay: 128, multiplier: 2 });
  });
});

describe('ExponentialBackoff', () => {
  it('starts at initialDelay, grows by the multiplier plus a jitter below the failure count, and stays at maxDelay', () => {
    const backoff = new ExponentialBackoff(resolveBackoff(undefined));
    const pauses = Array.from({ length: 14 }, () => backoff.next());
    expect(pauses[0]).toBe(1);
    expect(pauses[1]).toBe(2);
    for (let i = 1; i < pauses.length; i++) {
      expect(pauses[i]!).toBeGreaterThanOrEqual(Math.min(128, pauses[i - 1]! * 2));
      expect(pauses[i]!).toBeLessThanOrEqual(Math.min(128, pauses[i - 1]! * 2 + i - 1));
    }
    expect(pauses.slice(-4)).toEqual([128, 128, 128, 128]);
    const constant = new ExponentialBackoff(resolveBackoff({ initialDelay: 64, maxDelay: 64 }));
    expect([constant.next(), constant.next(), constant.next()]).toEqual([64, 64, 64]);
  });
});
