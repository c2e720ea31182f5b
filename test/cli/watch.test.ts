/**
 * `relock watch` against a real Redis: acquisitions are seen by reading the object (relock publishes
 * nothing when a lock is taken), releases through the object's channel, one JSON line per event.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { useCliHarness } from '../support/cli.js';
import { lockClient, numsub, uniqueName, waitUntil, type JsonLinesProcess, type Redis } from '../support/helpers.js';
import type { RedisServer } from '../support/redis.js';

const harness = useCliHarness();
let server: RedisServer;
let redis: Redis;
beforeAll(() => {
  ({ server, redis } = harness);
});

const watch = (name: string, ...extra: string[]): JsonLinesProcess => harness.start(['watch', name, '--json', '--url', server.url, ...extra]);

const event = (watcher: JsonLinesProcess, name: string): Promise<Record<string, any>> => watcher.nextWhere((line) => line.event === name, `a "${name}" event`);

describe('relock watch', () => {
  it('--count 2 sees an acquire/release pair, with the holders after each, and exits', async () => {
    const lock = lockClient(redis).getLock(uniqueName('watch-lock'));
    const watcher = watch(lock.name, '--count', '2');
    expect(await event(watcher, 'watching')).toMatchObject({ name: lock.name, type: null, state: null });
    const handle = await lock.acquire({ leaseMs: 30_000 });
    const acquired = await event(watcher, 'acquire');
    expect(acquired).toMatchObject({ name: lock.name, type: 'lock', owner: handle.owner, holds: 1, via: 'poll', state: { exists: true, holders: [{ owner: handle.owner, holds: 1 }] } });
    expect(Date.parse(acquired.at)).not.toBeNaN();
    await handle.release();
    expect(await event(watcher, 'release')).toMatchObject({ owner: handle.owner, holds: 0, state: { exists: false, holders: [] } });
    expect(await watcher.exited).toBe(0);
    expect(watcher.output).toHaveLength(3);
    expect(watcher.stderr).toBe('');
  });

  it('sees a release through the unlock message, long before its next read', async () => {
    const lock = lockClient(redis).getLock(uniqueName('watch-message'));
    const handle = await lock.acquire();
    const watcher = watch(lock.name, '--interval', '60000', '--count', '1');
    expect(await event(watcher, 'watching')).toMatchObject({ type: 'lock', state: { holders: [{ owner: handle.owner, holds: 1 }] } });
    // One subscriber: the watch itself.
    await waitUntil(async () => (await numsub(redis, lock.channel)) === 1, 5000, 5, 'the watch to subscribe');
    const released = performance.now();
    await handle.release();
    expect(await event(watcher, 'release')).toMatchObject({ owner: handle.owner, via: 'message', channel: lock.channel, message: '0' });
    expect(performance.now() - released).toBeLessThan(10_000);
    expect(await watcher.exited).toBe(0);
  });

  it('follows a semaphore and a latch by their counts', async () => {
    const client = lockClient(redis);
    const semaphore = client.getSemaphore(uniqueName('watch-sem'));
    await semaphore.trySetPermits(3);
    const semWatch = watch(semaphore.name, '--type', 'semaphore', '--count', '2');
    await event(semWatch, 'watching');
    await semaphore.acquire(2);
    expect(await event(semWatch, 'acquire')).toMatchObject({ type: 'semaphore', permits: 2, state: { freePermits: 1 } });
    await semaphore.release(2);
    expect(await event(semWatch, 'release')).toMatchObject({ permits: 2, state: { freePermits: 3 } });
    expect(await semWatch.exited).toBe(0);

    const latch = client.getCountDownLatch(uniqueName('watch-latch'));
    await latch.trySetCount(1);
    const latchWatch = watch(latch.name, '--type', 'latch', '--interval', '60000', '--count', '1');
    expect(await event(latchWatch, 'watching')).toMatchObject({ state: { count: 1 } });
    await latch.countDown();
    expect(await event(latchWatch, 'count')).toMatchObject({ from: 1, to: 0, via: 'message', message: '0', channel: latch.channel });
    expect(await latchWatch.exited).toBe(0);
  });

  it('--duration ends a watch that saw nothing', async () => {
    const watcher = watch(uniqueName('watch-idle'), '--duration', '300');
    await event(watcher, 'watching');
    expect(await watcher.exited).toBe(0);
    expect(watcher.output).toHaveLength(1);
  });
});
