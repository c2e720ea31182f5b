import { describe, expect, it } from '@jest/globals';
import { IllegalMonitorStateError, ReentryNeedsContextError, runInContext } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { lockClient, sleep, uniqueName } from '../support/helpers.js';

const env = useRedis();

/** Runs `tasks` concurrently; each records when it is inside the critical section. Returns the max overlap. */
function overlapMeter(): { enter(): void; exit(): void; max(): number } {
  let inside = 0;
  let max = 0;
  return {
    enter: () => void (max = Math.max(max, ++inside)),
    exit: () => void inside--,
    max: () => max,
  };
}

describe('ownership and contexts', () => {
  it('60 tasks started with Promise.all, each with getLock and no shared context, never overlap: no lost update', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const counterKey = uniqueName('counter');
    const meter = overlapMeter();
    await Promise.all(
      Array.from({ length: 60 }, async () => {
        const lock = client.getLock(name);
        await lock.lock();
        try {
          meter.enter();
          const value = Number((await env.redis.get(counterKey)) ?? 0);
          await sleep(1);
          await env.redis.set(counterKey, String(value + 1));
          meter.exit();
        } finally {
          await lock.unlock();
        }
      }),
    );
    expect(await env.redis.get(counterKey)).toBe('60');
    expect(meter.max()).toBe(1);
  });

  it('withLock from many concurrent tasks: mutual exclusion, each task its own owner', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const meter = overlapMeter();
    let counter = 0;
    await Promise.all(
      Array.from({ length: 50 }, () =>
        client.withLock(name, async () => {
          meter.enter();
          const value = counter;
          await sleep(1);
          counter = value + 1;
          meter.exit();
        }),
      ),
    );
    expect(counter).toBe(50);
    expect(meter.max()).toBe(1);
  });

  it('nested withLock on the same name reenters (hold count rises) instead of deadlocking', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const counts = await client.withLock(name, async () => {
      const outer = await client.getLock(name).getHoldCount();
      const inner = await client.withLock(name, () => client.getLock(name).getHoldCount(), { waitMs: 1000 });
      return [outer, inner, await client.getLock(name).getHoldCount()];
    });
    expect(counts).toEqual([1, 2, 1]);
    expect(await client.getLock(name).isLocked()).toBe(false);
  });

  it('sibling tasks inside one withLock that each take a second lock do not share its ownership', async () => {
    const client = lockClient(env.redis);
    const outer = uniqueName();
    const second = uniqueName();
    const meter = overlapMeter();
    await client.withLock(outer, () =>
      Promise.all(
        Array.from({ length: 5 }, () =>
          client.withLock(second, async () => {
            meter.enter();
            expect(await client.getLock(second).getHoldCount()).toBe(1);
            await sleep(5);
            meter.exit();
          }),
        ),
      ),
    );
    expect(meter.max()).toBe(1);
  });

  it('sibling tasks that each open runInContext own the lock separately; inside one context lock objects reenter', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const meter = overlapMeter();
    await Promise.all(
      Array.from({ length: 5 }, () =>
        runInContext(async () => {
          const first = client.getLock(name);
          await first.lock();
          meter.enter();
          const again = client.getLock(name);
          expect(await again.tryLock()).toBe(true);
          expect(await again.getHoldCount()).toBe(2);
          await again.unlock();
          await sleep(2);
          meter.exit();
          await first.unlock();
        }),
      ),
    );
    expect(meter.max()).toBe(1);
  });

  it('outside any context each acquisition is its own owner: the same object does not reenter (ReentryNeedsContextError, and the task\'s unlock() is then refused), and unlock() releases the task\'s own hold', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const a = client.getLock(name);
    await a.lock();
    // Outside a context a task that holds the object and takes it again is refused (issue 35), not left waiting for itself.
    await expect(a.tryLock()).rejects.toBeInstanceOf(ReentryNeedsContextError);
    expect(await client.getLock(name).tryLock()).toBe(false);
    expect(await client.getLock(name).getHoldCount()).toBe(0);
    await expect(client.getLock(name).unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    // The refusal is the task's newest note: its unlock() releases nothing (it could be a sibling's hold).
    expect(await a.getHoldCount()).toBe(0);
    await expect(a.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    expect(await a.isLocked()).toBe(true);
    await a.forceUnlock();
    // A task that never re-acquired releases its own hold.
    await a.lock();
    await a.unlock();
    expect(await a.isLocked()).toBe(false);
  });

  it('a handle releases its own hold from any context, and await using releases at block end', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    const handle = await runInContext(() => client.getLock(name).acquire({ waitMs: 0 }));
    expect(handle.owner).toMatch(new RegExp(`^${client.id}:`));
    await runInContext(() => handle.release());
    await handle.release();
    expect(await client.getLock(name).isLocked()).toBe(false);
    {
      await using held = await client.getLock(name).acquire({ leaseTime: 5, unit: 'seconds' });
      expect(held.leaseTime).toBe(5000);
      expect(await client.getLock(name).isLocked()).toBe(true);
    }
    expect(await client.getLock(name).isLocked()).toBe(false);
  });

  it('withLock releases when the task throws, and passes the task\'s error through', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await expect(client.withLock(name, () => Promise.reject(new Error('task failed')))).rejects.toThrow('task failed');
    expect(await client.getLock(name).isLocked()).toBe(false);
  });
});
