/**
 * relock: Redisson-grade distributed locks and synchronizers for Node.js on Redis (node-redis).
 *
 * Start with `createLockClient({ url })` or `createLockClient({ redis: client })`, then
 * `client.getLock(name).tryLock(1, 5, 'seconds')`, `client.withLock(name, fn)` or
 * `await using handle = await client.getLock(name).acquire()`.
 */
export { createLockClient, LockClient, type LockClientEvents, type LockClientOptions, type NodeRedisClient } from './client.js';
export { runInContext } from './context.js';
export {
  ClientClosedError,
  IllegalMonitorStateError,
  InvalidArgumentError,
  LockAcquireTimeoutError,
  LockLostError,
  LockUpgradeError,
  RedisCommandError,
  RedisUnavailableError,
  RelockError,
  WrongTypeError,
} from './errors.js';
export { RFairLock } from './fair-lock/fair-lock.js';
export { LockHandle } from './lock/handle.js';
export { RLock, type AcquireOptions } from './lock/lock.js';
export { RReadLock, RReadWriteLock, RWriteLock } from './read-write-lock/read-write-lock.js';
export type { RetryPolicy } from './redis/executor.js';
export type { TimeUnit } from './time.js';
export type { LockLostEvent } from './watchdog/watchdog.js';
