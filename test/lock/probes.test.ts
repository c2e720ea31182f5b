/**
 * Adversarial probes of the hot path (issue 12, second pass): the acquisition as its own executor
 * request, the non-async unlock, reused renewal records, the context's `until`/`releasing`, the waiting
 * path without promises or closures, the acquire script's free-key path, and the task notes that keep a
 * contextless unlock() away from another task's hold (src/task-holds.ts). Real Redis throughout; no
 * sleeps decide a race (waits are on events or polls with a deadline).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { ClientClosedError, createLockClient, IllegalMonitorStateError, LockAcquireTimeoutError, runInContext, type LockClient, type LockClientOptions, type LockLostEvent } from '../../src/index.js';
import { ACQUIRE } from '../../src/lock/scripts.js';
import { useRedis } from '../support/harness.js';
import { activeTimers, contextRunner, keys, lockClient, numsub, uniqueName, waitUntil } from '../support/helpers.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';

const env = useRedis({ server: { controllable: true } });

let proxy: TcpProxy | undefined;
let proxiedClient: LockClient | undefined;
afterEach(async () => {
  await proxiedClient?.shutdown();
  await proxy?.close();
  proxy = proxiedClient = undefined;
});

const lostEvents = (client: LockClient): LockLostEvent[] => {
  const lost: LockLostEvent[] = [];
  client.on('lockLost', (e) => lost.push(e));
  return lost;
};

/** Resolves on the next request chunk sent through `p` that contains `text` (latin1). */
const nextRequest = (p: TcpProxy, text: string): Promise<void> =>
  new Promise((resolve) => {
    p.onRequest = (chunk) => {
      if (chunk.includes(text, 0, 'latin1')) {
        p.onRequest = undefined;
        resolve();
      }
    };
  });

/** A lock client through a fresh TCP proxy to the file's server (relock makes and closes its connection). */
async function proxied(options: Omit<LockClientOptions, 'redis' | 'url'> = {}): Promise<{ p: TcpProxy; client: LockClient }> {
  proxy = await startProxy('127.0.0.1', env.server.port);
  const client = createLockClient({ url: `redis://127.0.0.1:${proxy.port}`, ...options });
  proxiedClient = client;
  return { p: proxy, client };
}

describe('probes: late grants of the first attempt and of wait attempts', () => {
  it('abort with the default reason while the first attempt is in flight: rejects with AbortError, the late grant is undone, nothing left', async () => {
    const client = lockClient(env.redis, { responseTimeout: 5000 });
    const name = uniqueName();
    const timers = activeTimers();
    const controller = new AbortController();
    env.server.pause();
    let waiting: Promise<unknown>;
    try {
      waiting = client.getLock(name).acquire({ signal: controller.signal });
      controller.abort();
      const error = await waiting.catch((e: unknown) => e);
      expect((error as Error).name).toBe('AbortError');
    } finally {
      env.server.resume();
    }
    await waitUntil(async () => (await env.redis.exists(client.getLock(name).key)) === 0, 3000, 10, 'the late grant to be undone');
    expect(client.stats().watchdogHolds).toBe(0);
    expect(client.stats().subscriptions).toBe(0);
    await waitUntil(() => activeTimers() <= timers, 2000, 10, 'timers to be cleared');
    // The object is usable again and the next owner holds alone.
    // The grant may land after the key was first seen free (the paused server runs the queued acquire later):
    // the next owner must get the lock once the undo's release is published.
    const other = lockClient(env.redis);
    const next = other.getLock(name);
    expect(await next.tryLock(5, 'seconds')).toBe(true);
    expect(Object.keys(await env.redis.hGetAll(next.key)).filter((f) => f !== 'kind')).toHaveLength(1);
    await next.unlock();
    expect(client.stats().watchdogHolds).toBe(0);
  });

  it('abort (default reason) while a wait attempt woken by the unlock is in flight: the late grant is undone, the next waiter gets the lock', async () => {
    const { p, client } = await proxied({ responseTimeout: 5000 });
    const holderClient = lockClient(env.redis);
    const name = uniqueName();
    const holder = holderClient.getLock(name);
    await holder.lock();
    await env.redis.scriptLoad(ACQUIRE.source);
    const controller = new AbortController();
    const waiting = client.getLock(name).acquire({ signal: controller.signal });
    const settled = waiting.then(() => 'acquired', (e: unknown) => (e as Error).name);
    await waitUntil(async () => (await numsub(env.redis, holder.channel)) === 1, 3000, 2, 'the waiter to subscribe');
    // Slow the waiter's connection, so that the attempt woken by the unlock is still in flight when we abort.
    p.latencyMs = 300;
    const sent = nextRequest(p, ACQUIRE.sha);
    await holder.unlock();
    await sent;
    controller.abort();
    expect(await settled).toBe('AbortError');
    p.latencyMs = 0;
    await waitUntil(async () => (await env.redis.exists(holder.key)) === 0, 5000, 10, 'the late grant to be undone');
    expect(client.stats().watchdogHolds).toBe(0);
    await waitUntil(() => client.stats().subscriptions === 0, 2000, 5, 'the waiter to leave its channel');
    const next = holderClient.getLock(name);
    expect(await next.tryLock()).toBe(true);
    await next.unlock();
  });

  it('shutdown while the first attempt is in flight: lock() rejects with ClientClosedError, no lockLost (nothing was held), and the grant ends with its lease', async () => {
    const client = lockClient(env.redis, { responseTimeout: 5000, lockWatchdogTimeout: 600 });
    const lost = lostEvents(client);
    const name = uniqueName();
    const lock = client.getLock(name);
    env.server.pause();
    let outcome: Promise<unknown>;
    try {
      outcome = lock.lock().then(() => 'acquired', (e: unknown) => e);
      await client.shutdown();
    } finally {
      env.server.resume();
    }
    expect(await outcome).toBeInstanceOf(ClientClosedError);
    expect(client.stats().watchdogHolds).toBe(0);
    // The acquisition was registered with the watchdog but not granted: shutdown gives up no hold of it.
    expect(lost).toEqual([]);
    // Whatever Redis granted is never renewed: the key is gone within one lease.
    await waitUntil(async () => (await env.redis.exists(lock.key)) === 0, 3000, 20, 'the key to expire');
  });
});

describe('probes: renewal record reuse (lock → unlock → lock on one object)', () => {
  const renewalsOf = async (client: LockClient, n: number): Promise<void> => {
    const calls = client.stats().renewalCalls;
    await waitUntil(() => client.stats().renewalCalls >= calls + n, 5000, 10, `${n} renewals`);
  };

  it('handle → release → handle on one object: the second hold is renewed; releasing the first again does nothing', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 300 });
    const lost = lostEvents(client);
    const lock = client.getLock(uniqueName());
    const first = await lock.acquire();
    await first.release();
    const second = await lock.acquire();
    await first.release();
    await renewalsOf(client, 4);
    expect(second.signal.aborted).toBe(false);
    expect(await env.redis.hGet(lock.key, second.owner)).toBe('1');
    expect(await env.redis.pTTL(lock.key)).toBeGreaterThan(0);
    await second.release();
    expect(lost).toEqual([]);
    expect(await env.redis.exists(lock.key)).toBe(0);
  });

  it('stopRefresh on the first handle, the second waits on the same object and takes the first\'s record: renewed for the second owner only', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 300 });
    const lost = lostEvents(client);
    const lock = client.getLock(uniqueName());
    const first = await lock.acquire();
    first.stopRefresh();
    const secondP = lock.acquire();
    await waitUntil(async () => (await numsub(env.redis, lock.channel)) === 1, 3000, 2, 'the second to wait');
    await first.release();
    const second = await secondP;
    await renewalsOf(client, 4);
    expect(second.signal.aborted).toBe(false);
    expect(await env.redis.hGet(lock.key, second.owner)).toBe('1');
    expect(await env.redis.hGet(lock.key, first.owner)).toBeNull();
    await second.release();
    expect(lost).toEqual([]);
    expect(client.stats().watchdogHolds).toBe(0);
  });

  it('an unlock that finds its hold gone, racing the next acquisition that reuses its record: lockLost names the old owner, the new hold is renewed', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 300 });
    const lost = lostEvents(client);
    const lock = client.getLock(uniqueName());
    const first = await lock.acquire();
    await env.redis.del(lock.key); // behind the holder's back
    const released = first.release().then(() => 'ok', (e: unknown) => e);
    const secondP = lock.acquire(); // registered while the first's unlock is in flight: reuses its record
    expect(await released).toBeInstanceOf(IllegalMonitorStateError);
    const second = await secondP;
    expect(first.signal.aborted).toBe(true);
    expect(lost.map((e) => e.owner)).toEqual([first.owner]);
    await renewalsOf(client, 4);
    expect(second.signal.aborted).toBe(false);
    expect(await env.redis.hGet(lock.key, second.owner)).toBe('1');
    await second.release();
    expect(lost.map((e) => e.owner)).toEqual([first.owner]);
  });

  it('contextless lock(); unlock() not awaited; lock() at once on the same object: the second hold is renewed past 3 leases', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 300 });
    const lost = lostEvents(client);
    const lock = client.getLock(uniqueName());
    await lock.lock();
    const unlocked = lock.unlock();
    const relocked = lock.lock();
    await unlocked;
    await relocked;
    await renewalsOf(client, 5);
    expect(await lock.isHeldByCurrentContext()).toBe(true);
    expect(await env.redis.pTTL(lock.key)).toBeGreaterThan(0);
    await lock.unlock();
    expect(lost).toEqual([]);
    expect(await lock.isLocked()).toBe(false);
  });
});

describe('probes: reentrancy and unlock racing an acquisition in flight', () => {
  it('two concurrent lock() calls of one context both reenter (count 2); another context waits for both unlocks', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const lock = client.getLock(name);
    const owner = contextRunner();
    const rival = contextRunner();
    await owner(async () => {
      await Promise.all([lock.lock(), lock.lock()]);
      expect(await lock.getHoldCount()).toBe(2);
    });
    expect(await rival(() => lock.tryLock())).toBe(false);
    await owner(() => lock.unlock());
    expect(await rival(() => lock.tryLock())).toBe(false);
    await owner(() => lock.unlock());
    expect(await rival(() => lock.tryLock())).toBe(true);
    await rival(() => lock.unlock());
    expect(await lock.isLocked()).toBe(false);
  });

  it('in a context, unlock() issued while the first acquisition is in flight waits for it and releases it', async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(uniqueName());
    await runInContext(async () => {
      const locking = lock.lock();
      const unlocking = lock.unlock();
      await locking;
      await unlocking;
      expect(await lock.getHoldCount()).toBe(0);
    });
    expect(await lock.isLocked()).toBe(false);
  });

  it('in a context, unlock() while a reentry is in flight releases one of two holds', async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(uniqueName());
    await runInContext(async () => {
      await lock.lock();
      const locking = lock.lock();
      const unlocking = lock.unlock();
      await Promise.all([locking, unlocking]);
      expect(await lock.getHoldCount()).toBe(1);
      await lock.unlock();
    });
    expect(await lock.isLocked()).toBe(false);
  });

  it('in a context, unlock() while the first attempt finds the lock busy: IllegalMonitorStateError, the other holder is untouched, the wait goes on', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const other = lockClient(env.redis).getLock(name);
    const outsideRun = contextRunner();
    await outsideRun(() => other.lock());
    const lock = client.getLock(name);
    await runInContext(async () => {
      const locking = lock.tryLock(10, 'seconds');
      await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
      expect(Object.keys(await env.redis.hGetAll(lock.key))).toHaveLength(2); // the other owner's field and kind
      await outsideRun(() => other.unlock());
      expect(await locking).toBe(true);
      expect(await lock.getHoldCount()).toBe(1);
      await lock.unlock();
    });
    expect(await lock.isLocked()).toBe(false);
  });

  it('a reentry after the key was deleted behind the owner: lockLost once, hold count 1, one unlock frees the key', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 30_000 });
    const lost = lostEvents(client);
    const lock = client.getLock(uniqueName());
    await runInContext(async () => {
      await lock.lock();
      await env.redis.del(lock.key);
      await lock.lock();
      expect(await lock.getHoldCount()).toBe(1);
      expect(lost).toHaveLength(1);
      await lock.unlock();
      await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    });
    expect(await lock.isLocked()).toBe(false);
    expect(client.stats().watchdogHolds).toBe(0);
  });

  it('one lock object used by two contexts: the second waits, its unlock never releases the first\'s hold', async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(uniqueName());
    let releaseA!: () => void;
    const aHolds = new Promise<void>((resolve) => (releaseA = resolve));
    let aLocked!: () => void;
    const aIn = new Promise<void>((resolve) => (aLocked = resolve));
    const a = runInContext(async () => {
      await lock.lock();
      aLocked();
      await aHolds;
      await lock.unlock();
    });
    await aIn;
    await runInContext(async () => {
      expect(await lock.tryLock()).toBe(false);
      await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
      expect(await lock.isLocked()).toBe(true);
      const waiting = lock.tryLock(10, 'seconds');
      releaseA();
      expect(await waiting).toBe(true);
      expect(await lock.getHoldCount()).toBe(1);
      await lock.unlock();
    });
    await a;
    expect(await lock.isLocked()).toBe(false);
  });
});

describe('probes: unlock outside a context', () => {
  /** Runs `fn` as a task of its own: its first step is an await, so nothing it notes leaks into its caller's synchronous context. */
  const task = <T>(fn: () => Promise<T>): Promise<T> => (async () => {
    await null;
    return fn();
  })();

  /** A holder task that locks `lock` outside any context and keeps it until `release()`. */
  const holding = (lock: { lock(): Promise<void>; unlock(): Promise<void> }, separate: boolean) => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const body = async (): Promise<string> => {
      await lock.lock();
      inside();
      await held;
      return lock.unlock().then(() => 'released', (e: unknown) => `holder's unlock: ${(e as Error).name}`);
    };
    const done = separate ? task(body) : body();
    return { entered, release, done };
  };

  it('separate tasks: unlock() after a failed tryLock(), tryLock(wait) or an aborted acquire() is IllegalMonitorStateError; the holder keeps the lock', async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(uniqueName());
    const h = holding(lock, true);
    await h.entered;
    await task(async () => {
      expect(await lock.tryLock()).toBe(false);
      await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
      expect(await lock.tryLock(50, 'ms')).toBe(false);
      await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
      const controller = new AbortController();
      const waiting = lock.acquire({ signal: controller.signal });
      await waitUntil(async () => (await numsub(env.redis, lock.channel)) === 1, 3000, 2, 'the waiter to subscribe');
      controller.abort();
      await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
      await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    });
    expect(await lock.isLocked()).toBe(true);
    h.release();
    expect(await h.done).toBe('released');
    expect(await lock.isLocked()).toBe(false);
  });

  it('a task whose tryLock() failed and that then locked and unlocked another object: its unlock() of the first is IllegalMonitorStateError; the holder keeps the lock', async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(uniqueName());
    const h = holding(lock, true);
    await h.entered;
    const outcome = await task(async () => {
      expect(await lock.tryLock()).toBe(false);
      const otherLock = client.getLock(uniqueName());
      await otherLock.lock();
      await otherLock.unlock();
      return lock.unlock().then(() => 'unlock() resolved', (e: unknown) => (e as Error).name);
    });
    const stillHeld = await lock.isLocked();
    h.release();
    expect({ outcome, stillHeld, holder: await h.done }).toEqual({ outcome: 'IllegalMonitorStateError', stillHeld: true, holder: 'released' });
  });

  it('a task that holds 20 contextless locks (more than the 8 notes it keeps of tries that hold nothing) unlocks every one of them', async () => {
    const client = lockClient(env.redis);
    const locks = Array.from({ length: 20 }, () => client.getLock(uniqueName()));
    const outcome = await task(async () => {
      await Promise.all(locks.map((l) => l.lock()));
      const results = await Promise.allSettled(locks.map((l) => l.unlock()));
      return results.map((r) => (r.status === 'fulfilled' ? 'released' : (r.reason as Error).name));
    });
    expect(outcome).toEqual(locks.map(() => 'released'));
    for (const lock of locks) expect(await lock.isLocked()).toBe(false);
  });

  it('unlock() never throws synchronously, also after shutdown', async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(uniqueName());
    await lock.lock();
    await client.shutdown();
    let p: Promise<void> | undefined;
    expect(() => {
      p = lock.unlock();
    }).not.toThrow();
    await expect(p).rejects.toBeInstanceOf(ClientClosedError);
    await env.redis.del(lock.key);
  });
});

describe('probes: many waiters, aborts and wait bounds', () => {
  it('40 waiters on one name over 3 clients, a third aborted with the default reason at random times: every other one acquires in turn, never two at once', async () => {
    const clients = Array.from({ length: 3 }, () => lockClient(env.redis));
    const name = uniqueName();
    const counter = `${name}:inside`;
    let inside = 0;
    let maxInside = 0;
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const lock = clients[i % 3]!.getLock(name);
        const controller = i % 3 === 0 ? new AbortController() : undefined;
        if (controller) setTimeout(() => controller.abort(), 5 + ((i * 37) % 200));
        try {
          const handle = await lock.acquire({ signal: controller?.signal, waitMs: 20_000 });
          inside++;
          maxInside = Math.max(maxInside, inside);
          expect(await env.redis.incr(counter)).toBe(1);
          await new Promise((r) => setImmediate(r));
          expect(await env.redis.decr(counter)).toBe(0);
          inside--;
          await handle.release();
          return 'acquired';
        } catch (error) {
          if ((error as Error).name === 'AbortError' && controller) return 'aborted';
          throw error;
        }
      }),
    );
    expect(maxInside).toBe(1);
    // Non-aborted waiters all acquired; none waited out a lost wake-up (the holder's TTL fallback is 30 s).
    outcomes.forEach((o, i) => {
      if (i % 3 !== 0) expect(o).toBe('acquired');
    });
    expect(await env.redis.exists(clients[0]!.getLock(name).key)).toBe(0);
    for (const c of clients) expect(c.stats().watchdogHolds).toBe(0);
  }, 20_000);

  it('30 contextless waiters on ONE shared object with default-reason aborts mixed in: all others acquire, no lost wake-up', async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(uniqueName());
    let inside = 0;
    let maxInside = 0;
    let acquired = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const controller = i % 4 === 1 ? new AbortController() : undefined;
        if (controller) setTimeout(() => controller.abort(), 1 + ((i * 53) % 120));
        try {
          const handle = await lock.acquire({ signal: controller?.signal });
          inside++;
          maxInside = Math.max(maxInside, inside);
          await new Promise((r) => setImmediate(r));
          inside--;
          acquired++;
          await handle.release();
        } catch (error) {
          if (!(controller && (error as Error).name === 'AbortError')) throw error;
        }
      }),
    );
    expect(maxInside).toBe(1);
    expect(acquired).toBeGreaterThanOrEqual(30 - 8);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(await lock.isLocked()).toBe(false);
    expect(client.stats().watchdogHolds).toBe(0);
  }, 20_000);

  it('tryLock(wait, lease) on a lock that stays busy returns false within the wait, leaving no subscription or timer; when free it takes that lease, not renewed', async () => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: 300 });
    const name = uniqueName();
    const holder = lockClient(env.redis).getLock(name);
    await holder.lock();
    const timers = activeTimers();
    const lock = client.getLock(name);
    const started = performance.now();
    expect(await lock.tryLock(250, 5000, 'ms')).toBe(false);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(245);
    expect(waited).toBeLessThan(800);
    await waitUntil(() => client.stats().subscriptions === 0, 2000, 5, 'channel left');
    await waitUntil(() => activeTimers() <= timers, 2000, 10, 'timers cleared');
    await holder.unlock();
    expect(await lock.tryLock(250, 700, 'ms')).toBe(true);
    const ttl = await env.redis.pTTL(lock.key);
    expect(ttl).toBeGreaterThan(400);
    expect(ttl).toBeLessThanOrEqual(700);
    expect(client.stats().watchdogHolds).toBe(0);
    await waitUntil(async () => (await env.redis.exists(lock.key)) === 0, 3000, 20, 'the lease to end');
    await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
  });

  it('acquire({ waitMs }) on a lock freed by expiry (no message): times out only when it stays busy', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const holder = lockClient(env.redis).getLock(name);
    expect(await holder.tryLock(0, 200, 'ms')).toBe(true);
    const handle = await client.getLock(name).acquire({ waitMs: 3000 });
    expect(await env.redis.hGet(client.getLock(name).key, handle.owner)).toBe('1');
    await handle.release();
    await holder.lock();
    await expect(client.getLock(name).acquire({ waitMs: 100 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    await holder.unlock();
  });

  it('fair lock: 20 waiters over 2 clients, every fourth aborted (default reason): the others all acquire, one at a time, and no queue key is left', async () => {
    const clients = Array.from({ length: 2 }, () => lockClient(env.redis));
    const name = uniqueName();
    const first = clients[0]!.getFairLock(name);
    await first.lock();
    let inside = 0;
    let maxInside = 0;
    const controllers: AbortController[] = [];
    const waits = Array.from({ length: 20 }, async (_, i) => {
      const controller = i % 4 === 2 ? new AbortController() : undefined;
      if (controller) controllers.push(controller);
      try {
        const handle = await clients[i % 2]!.getFairLock(name).acquire({ signal: controller?.signal, waitMs: 15_000 });
        inside++;
        maxInside = Math.max(maxInside, inside);
        await new Promise((r) => setImmediate(r));
        inside--;
        await handle.release();
        return 'acquired';
      } catch (error) {
        if (controller && (error as Error).name === 'AbortError') return 'aborted';
        throw error;
      }
    });
    const queueKey = (first as unknown as { queueKey: string }).queueKey;
    await waitUntil(async () => (await env.redis.lLen(queueKey)) === 20, 5000, 5, 'all 20 waiters to queue');
    for (const c of controllers) c.abort();
    await first.unlock();
    const outcomes = await Promise.all(waits);
    expect(maxInside).toBe(1);
    outcomes.forEach((o, i) => expect(o).toBe(i % 4 === 2 ? 'aborted' : 'acquired'));
    await waitUntil(async () => (await keys(env.redis, `*${name}*`)).length === 0, 5000, 20, 'no key of the fair lock left');
  }, 30_000);

  it('spin lock: an acquire aborted (default reason) mid-poll rejects with AbortError, leaves no hold and no timer; the holder is untouched', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const holder = lockClient(env.redis).getSpinLock(name);
    await holder.lock();
    const timers = activeTimers();
    const controller = new AbortController();
    const waiting = client.getSpinLock(name).acquire({ signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    expect(client.stats().watchdogHolds).toBe(0);
    await waitUntil(() => activeTimers() <= timers, 2000, 10, 'timers cleared');
    expect(Object.keys(await env.redis.hGetAll(holder.key)).filter((f) => f !== 'kind')).toHaveLength(1);
    await holder.unlock();
    expect(await holder.isLocked()).toBe(false);
  });
});
