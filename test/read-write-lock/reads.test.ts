/**
 * RReadWriteLock's reads are idempotent calls: a reply lost on the way back (the script ran, the socket
 * closed before its answer came) is sent again, and the caller gets the answer, not an error.
 */
import { expect, it } from '@jest/globals';
import { IllegalMonitorStateError, runInContext } from '../../src/index.js';
import { RW_ACQUIRE, RW_IS_LOCKED } from '../../src/read-write-lock/scripts.js';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName } from '../support/helpers.js';
import { useProxied } from '../lock/protocol/engine.js';

const env = useRedis();
const proxied = useProxied(env);

it('isLocked of either side, its reply lost once: retried, answers true for the held read side and false for the free write side', async () => {
  const name = uniqueName('rw-reads');
  const read = await lockClient(env.redis).getReadWriteLock(name).readLock().acquire({ leaseMs: 30_000 });
  const { proxy, client } = await proxied();
  await env.redis.scriptLoad(RW_IS_LOCKED.source);
  const rw = client.getReadWriteLock(name);
  for (const [side, held] of [[rw.readLock(), true], [rw.writeLock(), false]] as const) {
    const lost = proxy.loseReply({ match: RW_IS_LOCKED.sha });
    expect(await side.isLocked()).toBe(held);
    await lost;
  }
  expect(proxy.repliesLost).toBe(2);
  await read.release();
});

it('a context holding the write side, then the read side (a downgrade): each side knows its own hold; releasing the read side leaves the write side held by the context', async () => {
  const rw = lockClient(env.redis).getReadWriteLock(uniqueName('rw-sides'));
  const [read, write] = [rw.readLock(), rw.writeLock()];
  await runInContext(async () => {
    await write.lock();
    await read.lock();
    expect([await write.isHeldByCurrentContext(), await read.isHeldByCurrentContext()]).toEqual([true, true]);
    await read.unlock();
    expect([await write.isHeldByCurrentContext(), await read.isHeldByCurrentContext()]).toEqual([true, false]);
    await expect(read.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    await write.unlock();
    expect([await write.isLocked(), await read.isLocked()]).toEqual([false, false]);
  });
});

it('a context holding the write side takes the read side and its reply is lost: the retry finds the read hold granted (guarded by the read side\'s own count) and adds none; the two unlocks free the lock', async () => {
  const name = uniqueName('rw-downgrade-lost');
  const { proxy, client } = await proxied();
  await env.redis.scriptLoad(RW_ACQUIRE.source);
  const rw = client.getReadWriteLock(name);
  await runInContext(async () => {
    await rw.writeLock().lock();
    const lost = proxy.loseReply({ match: RW_ACQUIRE.sha });
    await rw.readLock().lock();
    await lost;
    expect(proxy.repliesLost).toBe(1);
    // One write hold and one read hold: a guard taken from the write side's count would grant the read twice.
    const counts = Object.entries(await env.redis.hGetAll(rw.key)).filter(([field]) => field !== 'mode' && field !== 'kind');
    expect(counts.map(([, count]) => count)).toEqual(['1', '1']);
    await rw.readLock().unlock();
    await rw.writeLock().unlock();
  });
  expect(await env.redis.exists(rw.key)).toBe(0);
});
