'use strict';
const { AsyncResource } = require('node:async_hooks');
/**
 * What a consumer of the built package does, run from both entry points (esm.mjs imports relock,
 * cjs.cjs requires it): take and release a lock against the Redis at `url`, reenter it in a lock context,
 * see another owner refused, hit a typed error on a second unlock, time out on `busyName` (held by the test), and
 * run `withLock`. Resolves to what it saw, as plain JSON.
 */
exports.run = async function run(relock, { url, name, busyName }) {
  const { createLockClient, IllegalMonitorStateError, LockAcquireTimeoutError, RelockError } = relock;
  const locks = createLockClient({ url });
  // Runs a function outside any lock context, from inside one: another owner.
  const outside = new AsyncResource('relock-consumer');
  try {
    const lock = locks.getLock(name);
    const { acquired, ttl, reentered, holdCount, otherOwner } = await locks.runInContext(async () => {
      const seen = { acquired: await lock.tryLock(1, 5, 'seconds'), ttl: await lock.remainTimeToLive() };
      seen.reentered = await lock.tryLock(0, 5, 'seconds');
      seen.holdCount = await lock.getHoldCount();
      seen.otherOwner = await outside.runInAsyncScope(() => locks.getLock(name).tryLock());
      await lock.unlock();
      await lock.unlock();
      return seen;
    });
    const lockedAfterUnlock = await lock.isLocked();

    let secondUnlock;
    try {
      await lock.unlock();
    } catch (error) {
      secondUnlock = { name: error.name, code: error.code, typed: error instanceof IllegalMonitorStateError && error instanceof RelockError };
    }
    let busy;
    try {
      await locks.getLock(busyName).acquire({ waitMs: 50 });
    } catch (error) {
      busy = { name: error.name, typed: error instanceof LockAcquireTimeoutError, waitTimeMs: error.waitTimeMs };
    }
    const inside = await locks.withLock(name, async (signal) => ({ aborted: signal.aborted, locked: await locks.getLock(name).isLocked() }));
    const lockedAfterWithLock = await lock.isLocked();
    return { acquired, reentered, holdCount, ttl, otherOwner, lockedAfterUnlock, secondUnlock, busy, inside, lockedAfterWithLock };
  } finally {
    await locks.shutdown();
  }
};
