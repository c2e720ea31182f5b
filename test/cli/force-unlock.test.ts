/**
 * `relock force-unlock` against a real Redis: it deletes the lock through the library's `forceUnlock` of
 * the detected type, so that waiters (in other processes' clients) are woken by pub/sub at once, and it
 * never acts without confirmation.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { runInContext, type LockHandle } from '../../src/index.js';
import { json, runCli, runCliInTerminal, useCliHarness, type CliResult } from '../support/cli.js';
import { lockClient, numsub, uniqueName, waitUntil, type Redis } from '../support/helpers.js';
import type { RedisServer } from '../support/redis.js';

const harness = useCliHarness();
let server: RedisServer;
let redis: Redis;
beforeAll(() => {
  ({ server, redis } = harness);
});

/**
 * A wake-up by the unlock message arrives within milliseconds; without it a waiter would sleep until the
 * holder's TTL (30 s here). 3 s leaves room for a loaded machine.
 */
const WAKE_BOUND_MS = 3000;

/** Runs `force-unlock <name> --yes --json`; resolves with the result and the time the process ended. */
async function forceUnlock(name: string, ...extra: string[]): Promise<{ result: CliResult; endedAt: number }> {
  const result = await runCli(['force-unlock', name, '--yes', '--json', '--url', server.url, ...extra]);
  return { result, endedAt: performance.now() };
}

/** Starts `acquire` and resolves, once it is granted, with the time of the grant. */
function grantTime(acquire: Promise<LockHandle>): Promise<{ handle: LockHandle; at: number }> {
  return acquire.then((handle) => ({ handle, at: performance.now() }));
}

describe('relock force-unlock', () => {
  it('deletes a held lock with --yes, reports what it deleted, and wakes a waiter at once', async () => {
    const name = uniqueName('force-lock');
    const holder = await lockClient(redis).getLock(name).acquire();
    const waiterLock = lockClient(redis).getLock(name);
    const waiter = grantTime(waiterLock.acquire({ waitMs: 60_000 }));
    await waitUntil(async () => (await numsub(redis, waiterLock.channel)) === 1, 5000, 5, 'the waiter to subscribe');
    const { result, endedAt } = await forceUnlock(name);
    expect(result.code).toBe(0);
    expect(json(result)).toMatchObject({ name, type: 'lock', deleted: [name], before: { holders: [{ owner: holder.owner, holds: 1 }] } });
    const { handle, at } = await waiter;
    expect(at - endedAt).toBeLessThan(WAKE_BOUND_MS);
    expect(handle.owner).not.toBe(holder.owner);
    await handle.release();
    await expect(holder.release()).rejects.toMatchObject({ name: 'IllegalMonitorStateError' });
  });

  it('refuses without --yes when stdin is not a terminal, and asks on a terminal', async () => {
    const lock = lockClient(redis).getLock(uniqueName('force-ask'));
    const holder = await lock.acquire({ leaseMs: 60_000 });
    const refused = await runCli(['force-unlock', lock.name, '--url', server.url]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^relock: stdin is not a terminal: pass --yes/);
    expect(await lock.isLocked()).toBe(true);
    const declined = await runCliInTerminal(['force-unlock', lock.name, '--url', server.url], { input: 'n\n' });
    expect(declined.code).toBe(1);
    expect(declined.stdout).toContain(`Force-unlock lock (RLock) "${lock.name}" held by ${holder.owner} ×1?`);
    expect(declined.stdout).toContain('relock: not confirmed: nothing was changed');
    expect(await lock.isLocked()).toBe(true);
    // Enter alone takes the default, N (issue 28: a prompt whose default unlocks would be a trap).
    const entered = await runCliInTerminal(['force-unlock', lock.name, '--url', server.url], { input: '\n' });
    expect(entered.code).toBe(1);
    expect(entered.stdout).toContain('relock: not confirmed: nothing was changed');
    expect(await lock.isLocked()).toBe(true);
    const confirmed = await runCliInTerminal(['force-unlock', lock.name, '--url', server.url], { input: 'y\n' });
    expect(confirmed.code).toBe(0);
    expect(confirmed.stdout).toContain(`force-unlocked lock (RLock) "${lock.name}": deleted ${lock.key}`);
    expect(await lock.isLocked()).toBe(false);
  });

  it('force-unlocks a fair lock and wakes the head of its queue', async () => {
    const client = lockClient(redis);
    const name = uniqueName('force-fair');
    await client.getFairLock(name).acquire();
    const lock = client.getFairLock(name);
    const head = grantTime(runInContext(() => client.getFairLock(name).acquire({ waitMs: 60_000 })));
    await waitUntil(async () => (await redis.lLen(lock.queueKey)) === 1, 5000, 5, 'a queued waiter');
    const [owner] = await redis.lRange(lock.queueKey, 0, 0);
    await waitUntil(async () => (await numsub(redis, lock.waiterChannel(owner!))) === 1, 5000, 5, 'the waiter to subscribe');
    const { result, endedAt } = await forceUnlock(name);
    expect(json(result)).toMatchObject({ type: 'fair-lock', deleted: [name], before: { queue: [{ owner }] } });
    const { handle, at } = await head;
    expect(handle.owner).toBe(owner);
    expect(at - endedAt).toBeLessThan(WAKE_BOUND_MS);
    await handle.release();
  });

  it('force-unlocks a read-write lock in write mode, deleting its leases too, and wakes a reader', async () => {
    const client = lockClient(redis);
    const rw = client.getReadWriteLock(uniqueName('force-rw'));
    await rw.writeLock().acquire();
    const reader = grantTime(runInContext(() => client.getReadWriteLock(rw.name).readLock().acquire({ waitMs: 60_000 })));
    await waitUntil(async () => (await numsub(redis, rw.readLock().channel)) === 1, 5000, 5, 'the reader to subscribe');
    const { result, endedAt } = await forceUnlock(rw.name);
    expect(json(result)).toMatchObject({ type: 'read-write-lock', deleted: [rw.key, rw.readLock().leasesKey], before: { mode: 'write' } });
    const { handle, at } = await reader;
    expect(at - endedAt).toBeLessThan(WAKE_BOUND_MS);
    await handle.release();
  });

  it('leaves anything that is not a held lock alone', async () => {
    const client = lockClient(redis);
    const semaphore = client.getSemaphore(uniqueName('force-sem'));
    await semaphore.trySetPermits(0);
    const refused = await runCli(['force-unlock', semaphore.name, '--yes', '--url', server.url]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('force-unlock applies to locks');
    expect(await redis.get(semaphore.key)).toBe('0');
    const missing = await runCli(['force-unlock', uniqueName('force-missing'), '--yes', '--url', server.url]);
    expect(missing.code).toBe(3);
    const fenced = client.getFencedLock(uniqueName('force-fenced'));
    await fenced.tryLockAndGetToken(0, 5, 'seconds');
    await fenced.unlock();
    const { result } = await forceUnlock(fenced.name);
    expect(result.code).toBe(0);
    expect(json(result)).toMatchObject({ type: 'fenced-lock', deleted: [], message: expect.stringContaining('is not held: nothing to unlock') });
    expect(await fenced.getToken()).toBe(1n);
  });
});
