import { beforeAll, describe, expect, it } from '@jest/globals';
import { LockUpgradeError, runInContext } from '../../src/index.js';
import { lockClient, serverTime, uniqueName, waitUntil, type Redis } from '../support/helpers.js';
import { useFamilyHarness } from '../support/family.js';

const harness = useFamilyHarness();
let redis: Redis;
beforeAll(() => {
  redis = harness.redis;
});

describe('a read hold that ended is no upgrade (issue 20, defect 2: Redisson returns true)', () => {
  it('after the read hold\'s lease expired, the same context takes the write lock', () => runInContext(async () => {
    const rw = lockClient(redis).getReadWriteLock(uniqueName('rw'));
    await rw.readLock().lock(300, 'ms');
    await waitUntil(async () => (await redis.exists(rw.readLock().key)) === 0, 5000, 10, 'the read hold to expire');
    expect(await rw.readLock().isHeldByCurrentContext()).toBe(false);
    expect(await rw.writeLock().tryLock()).toBe(true);
    expect(await rw.writeLock().isHeldByCurrentContext()).toBe(true);
    await rw.writeLock().unlock();
  }));

  it('after readLock().forceUnlock(), the same context takes the write lock', () => runInContext(async () => {
    const rw = lockClient(redis).getReadWriteLock(uniqueName('rw'));
    await rw.readLock().lock();
    expect(await rw.readLock().forceUnlock()).toBe(true);
    expect(await rw.writeLock().tryLock()).toBe(true);
    await rw.writeLock().unlock();
  }));

  it('an expired read hold of the owner while another reader keeps the lock: the write lock is busy, not an upgrade', async () => {
    const client = lockClient(redis);
    const name = uniqueName('rw');
    const other = lockClient(redis).getReadWriteLock(name).readLock();
    await runInContext(async () => {
      const rw = client.getReadWriteLock(name);
      await rw.readLock().lock(300, 'ms');
      const field = (await redis.hKeys(rw.readLock().key)).find((f) => f !== 'mode' && f !== 'kind')!;
      // Another reader (the watchdog renews it) keeps the hash alive after this owner's lease ends.
      expect(await other.tryLock()).toBe(true);
      const deadline = Number(await redis.zScore(rw.readLock().leasesKey, `${field}:1`));
      await waitUntil(async () => (await serverTime(redis)) > deadline + 5, 5000, 20, 'the read lease to end');
      expect(await redis.hExists(rw.readLock().key, field)).toBe(1);
      expect(await rw.writeLock().tryLock()).toBe(false);
      await expect(rw.writeLock().tryLock(100, 'ms')).resolves.toBe(false);
      await other.unlock();
    });
  });

  it('a live read hold of the same context still throws LockUpgradeError', () => runInContext(async () => {
    const rw = lockClient(redis).getReadWriteLock(uniqueName('rw'));
    await rw.readLock().lock(10, 's');
    await expect(rw.writeLock().tryLock()).rejects.toBeInstanceOf(LockUpgradeError);
    await rw.readLock().unlock();
  }));
});
