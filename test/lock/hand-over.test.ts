import { describe, expect, it } from '@jest/globals';
import { InvalidArgumentError, LockLostError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { lockClient, sleep, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis();

/** Issue 20: redis-semaphore's `identifier` + `acquiredExternally` (hand a held lock to another process) and `stopRefresh()`. */
describe('hand-over of a held lock, and stopRefresh', () => {
  it('A acquires under an identifier, B takes it over and renews it after A stops refreshing, B releases it', async () => {
    const [a, b, c] = [0, 1, 2].map(() => lockClient(env.redis, { lockWatchdogTimeout: 600 }));
    const name = uniqueName();
    const identifier = `job-${name}`;
    const held = await a!.getLock(name).acquire({ identifier });
    expect(held.owner).toBe(identifier);
    expect(await env.redis.hGet(name, identifier)).toBe('1');
    const taken = await b!.getLock(name).acquire({ identifier, acquiredExternally: true });
    held.stopRefresh();
    // Three watchdog timeouts later the lock is still held: B's watchdog renews it.
    await sleep(1800);
    expect(await env.redis.hGet(name, identifier)).toBe('1');
    expect(await c!.getLock(name).tryLock()).toBe(false);
    expect(taken.signal.aborted).toBe(false);
    await taken.release();
    expect(await env.redis.exists(name)).toBe(0);
    expect(await c!.getLock(name).tryLock()).toBe(true);
  });

  it('a hand-over with a lease sets that lease; an identifier that holds nothing is LockLostError', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    await client.getLock(name).acquire({ identifier: 'worker-7', leaseMs: 60_000 });
    const taken = await lockClient(env.redis).getLock(name).acquire({ identifier: 'worker-7', acquiredExternally: true, leaseMs: 5000 });
    expect(taken.leaseTime).toBe(5000);
    expect(await env.redis.pTTL(name)).toBeLessThanOrEqual(5000);
    await taken.release();
    const error = await client.getLock(name).acquire({ identifier: 'worker-7', acquiredExternally: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect(await env.redis.exists(name)).toBe(0);
  });

  it('stopRefresh alone lets the lock expire within the watchdog timeout; the signal does not report it', async () => {
    const lock = lockClient(env.redis, { lockWatchdogTimeout: 500 }).getLock(uniqueName());
    const handle = await lock.acquire();
    handle.stopRefresh();
    handle.stopRefresh();
    await waitUntil(async () => (await env.redis.exists(lock.key)) === 0, 2000, 10, 'the lock to expire');
    expect(handle.signal.aborted).toBe(false);
    await expect(handle.release()).rejects.toThrow(/not held/);
  });

  it('bad identifiers and options are InvalidArgumentError, nothing written', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName();
    for (const identifier of ['', 'kind', 'mode', 'x'.repeat(201), 5 as unknown as string]) {
      await expect(client.getLock(name).acquire({ identifier })).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    await expect(client.getLock(name).acquire({ acquiredExternally: true })).rejects.toThrow(/identifier/);
    await expect(client.getReadWriteLock(name).writeLock().acquire({ identifier: 'w' })).rejects.toThrow(/read-write/);
    expect(await env.redis.exists(name)).toBe(0);
  });
});
