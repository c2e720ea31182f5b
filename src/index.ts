/**
 * relock: Redisson-grade distributed locks and synchronizers for Node.js on Redis (node-redis).
 *
 * Start with `createLockClient({ url })` or `createLockClient({ redis: client })`, then
 * `client.getLock(name).tryLock(1, 5, 'seconds')`, `client.withLock(name, fn)` or
 * `await using handle = await client.getLock(name).acquire()`. Semaphores and latches:
 * `client.getPermitExpirableSemaphore(name)`, `client.getSemaphore(name)`, `client.getCountDownLatch(name)`.
 */
export { createLockClient, LockClient, type LockClientEvents, type LockClientOptions, type NodeRedisClient } from './client.js';
export { runInContext } from './context.js';
export { RCountDownLatch, type LatchAwaitOptions } from './count-down-latch/latch.js';
export {
  ClientClosedError,
  IllegalMonitorStateError,
  InvalidArgumentError,
  LockAcquireTimeoutError,
  LockLostError,
  PermitAcquireTimeoutError,
  PermitNotHeldError,
  RedisCommandError,
  RedisUnavailableError,
  RelockError,
  WrongTypeError,
} from './errors.js';
export { LockHandle } from './lock/handle.js';
export { RLock, type AcquireOptions } from './lock/lock.js';
export { PermitHandle } from './permit-expirable-semaphore/handle.js';
export { RPermitExpirableSemaphore, type PermitAcquireOptions } from './permit-expirable-semaphore/semaphore.js';
export type { RetryPolicy } from './redis/executor.js';
export { RSemaphore, type SemaphoreAcquireOptions } from './semaphore/semaphore.js';
export type { TimeUnit } from './time.js';
export type { LockLostEvent } from './watchdog/watchdog.js';
