/**
 * relock: Redisson-grade distributed locks and synchronizers for Node.js on Redis (node-redis).
 *
 * Start with `createLockClient({ url })` or `createLockClient({ redis: client })`, then
 * `client.getLock(name).tryLock(1, 5, 'seconds')`, `client.withLock(name, fn)` or
 * `await using handle = await client.getLock(name).acquire()`. Semaphores and latches:
 * `client.getPermitExpirableSemaphore(name)`, `client.getSemaphore(name)`, `client.getCountDownLatch(name)`.
 *
 * The guides below are rendered as pages of the API reference (`npm run docs`).
 *
 * @packageDocumentation
 * @document ../docs/getting-started.md
 * @document ../docs/concepts.md
 * @document ../docs/guarantees.md
 * @document ../docs/cookbook.md
 * @document ../docs/migration.md
 * @document ../docs/fencing.md
 * @document ../docs/locks.md
 * @document ../docs/locks-more.md
 * @document ../docs/semaphores.md
 * @document ../docs/leader-election.md
 * @document ../docs/scheduled-jobs.md
 * @document ../docs/nestjs.md
 * @document ../docs/express.md
 * @document ../docs/fastify.md
 * @document ../docs/topologies.md
 * @document ../docs/security.md
 * @document ../docs/reliability.md
 * @document ../docs/benchmarks.md
 * @document ../docs/cli.md
 * @document ../docs/observability.md
 * @document ../docs/architecture.md
 * @document ../CHANGELOG.md
 */
export { createLockClient, LockClient, type LockClientEvents, type LockClientOptions, type NodeRedisClient } from './client.js';
export { runInContext } from './context.js';
export { RCountDownLatch, type LatchAwaitOptions } from './count-down-latch/latch.js';
export {
  ClientClosedError,
  CrossSlotError,
  IllegalMonitorStateError,
  InvalidArgumentError,
  KeyspaceEventsUnavailableError,
  LockAcquireTimeoutError,
  LockLostError,
  NoSyncedReplicasError,
  PermitAcquireTimeoutError,
  PermissionError,
  PermitNotHeldError,
  LockUpgradeError,
  RedisCommandError,
  RedisUnavailableError,
  RelockError,
  WrongTypeError,
} from './errors.js';
export { OwnerUnknownError, ReentryNeedsContextError } from './errors.js';
export { RFencedLock } from './fenced-lock/fenced-lock.js';
export { RFencedResource, type FencedResourceState } from './fenced-resource/fenced-resource.js';
export type { FencingToken } from './fencing/input.js';
export { FenceTableMissingError, StaleTokenError } from './errors.js';
export type { AcquireMessage, LostMessage, ReleaseMessage } from './observe/channels.js';
export type { AcquireOutcome, MetricKind, MetricKinds, WokenBy } from './observe/kinds.js';
export type { MeterProviderLike, OtelOptions, TracerProviderLike } from './observe/options.js';
export type { ObjectKind, ObjectKinds } from './kinds.js';
export type { ClosedClient } from './errors.js';
export { MAX_NAME_LENGTH } from './keys.js';
export type { LockEvent } from './lock/events.js';
export { LockHandle } from './lock/handle.js';
export { RLock, type AcquireOptions } from './lock/lock.js';
export type { GroupAcquireOptions, GroupLock } from './multi-lock/group-lock.js';
export { RMultiLock } from './multi-lock/multi-lock.js';
export { RRedLock } from './red-lock/red-lock.js';
export { RSpinLock, type SpinLockOptions } from './spin-lock/spin-lock.js';
export { RNonReentrantLock } from './non-reentrant-lock/non-reentrant-lock.js';
export { PermitHandle } from './permit-expirable-semaphore/handle.js';
export { RPermitExpirableSemaphore, type PermitAcquireOptions } from './permit-expirable-semaphore/semaphore.js';
export { RFairLock } from './fair-lock/fair-lock.js';
export { RReadLock, RReadWriteLock, RWriteLock } from './read-write-lock/read-write-lock.js';
export type { RetryPolicy } from './redis/executor.js';
export { functionsLibrary, type FunctionsLibrary } from './redis/functions.js';
export type { ScriptingMode } from './redis/script.js';
export { RSemaphore, type SemaphoreAcquireOptions } from './semaphore/semaphore.js';
export type { TimeUnit } from './time.js';
export type { LockLostEvent } from './watchdog/watchdog.js';
export {
  RLeaderElection,
  type CampaignOptions,
  type LeaderChange,
  type LeaderElectionOptions,
  type LeaderInfo,
  type ObserveOptions,
  type RunLeaderOptions,
} from './leader-election/leader-election.js';
export { Leadership } from './leader-election/leadership.js';
export { LeadershipEndedError } from './errors.js';
export type { ExclusiveRun, RunExclusiveOptions } from './job-lock/job-lock.js';
