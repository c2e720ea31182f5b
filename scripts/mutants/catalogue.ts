/**
 * The mutation catalogue of `npm run mutants`: one entry per safety mechanism, each a deliberate break of
 * it (a piece of text in a source file and what to put instead) and the jest tests that must fail when it
 * is broken. A new safety mechanism adds one entry here; the runner (run.ts) checks that every `find`
 * still occurs exactly once, so an entry made stale by a refactoring fails loudly instead of passing.
 */
import type { Mutation } from './scratch.js';

export interface CatalogueEntry extends Mutation {
  /** Short stable name, used by `--only` and in the table. */
  readonly id: string;
  /** The safety mechanism the mutation removes, in words. */
  readonly mechanism: string;
  /** The jest test files that must kill it (paths from the repository root). */
  readonly tests: readonly string[];
  /** A jest `-t` pattern narrowing the run to the tests that kill it (anchor it with `^`). */
  readonly pattern?: string;
  /** Part of `--quick` (the subset `.ci/run` runs). */
  readonly quick?: boolean;
}

const CONTRACT = 'test/contract/locks.test.ts';
const CORE = 'test/core.test.ts';

export const CATALOGUE: readonly CatalogueEntry[] = [
  {
    id: 'unlock-owner',
    mechanism: 'unlock checks the owner (another owner changes nothing)',
    file: 'src/lock/scripts.ts',
    find: '  return nil\nend\nlocal result = 0',
    replace: '  count = 1\nend\nlocal result = 0',
    tests: [CONTRACT],
    pattern: '^RLock contract only the holder unlocks',
  },
  {
    id: 'shared-object-owner',
    mechanism: 'per-task ownership of a shared lock object (each contextless acquisition its own owner)',
    file: 'src/context.ts',
    find: 'owner === undefined ? { id: newId(), parent: undefined, holds: new Map(), detached: true } :',
    replace: 'owner === undefined ? ((globalThis as { relockShared?: LockContext }).relockShared ??= { id: newId(), parent: undefined, holds: new Map(), detached: true }) :',
    tests: [CORE],
    pattern: '^one lock object shared by concurrent tasks outside any context RLock: Promise.all',
    quick: true,
  },
  {
    id: 'reentry-ttl',
    mechanism: 'reentry raises the TTL, never lowers it',
    file: 'src/lock/scripts.ts',
    find: "if redis.call('pttl', lock) < tonumber(leaseMs) then redis.call('pexpire', lock, leaseMs) end",
    replace: "redis.call('pexpire', lock, leaseMs)",
    tests: [CONTRACT],
    pattern: '^RLock contract reenters inside a context',
    quick: true,
  },
  {
    id: 'watchdog-cancel',
    mechanism: 'unlock stops the watchdog renewing the hold',
    file: 'src/lock/lock.ts',
    find: 'const released = kind ? core.watchdog.release(this.key, owner) : undefined;',
    replace: 'const released = undefined;',
    tests: [CONTRACT],
    pattern: '^RLock contract the watchdog keeps a hold past three leases',
  },
  {
    id: 'renewal-owner',
    mechanism: 'renewal checks the owner, not only that the key exists',
    file: 'src/lock/scripts.ts',
    find: "if redis.pcall('hexists', lock, owner) == 1 then",
    replace: "if redis.pcall('exists', lock) == 1 then",
    tests: [CONTRACT],
    pattern: '^RLock contract renewal checks the owner',
    quick: true,
  },
  {
    id: 'publish-on-release',
    mechanism: 'a release publishes on the lock channel (waiters wake by message)',
    file: 'src/lock/scripts.ts',
    find: `unlockSource({ prelude: PUBLISH, released: "if channel ~= '' then publish('0') end" })`,
    replace: "unlockSource({ prelude: PUBLISH, released: '' })",
    tests: [CONTRACT],
    pattern: '^RLock contract a waiter parked on its channel wakes',
  },
  {
    id: 'retry-after-subscribe',
    mechanism: 'the wait loop tries again after subscribing (a release while subscribing is not missed)',
    file: 'src/pubsub/wait.ts',
    find: 'let current = liveBefore;',
    replace: 'let current = true;',
    tests: [CONTRACT],
    pattern: '^RLock contract a waiter parked on its channel wakes',
  },
  {
    id: 'expired-permit-reclaim',
    mechanism: 'expired permits of an expirable semaphore are reclaimed',
    file: 'src/permit-expirable-semaphore/scripts.ts',
    find: "if redis.call('zremrangebyscore', permits, '-inf', now) > 0 then announce() end",
    replace: '',
    tests: [CORE],
    pattern: '^semaphores and latch core expirable semaphore',
  },
  {
    id: 'permit-bound',
    mechanism: 'a semaphore hands out no more permits than are free',
    file: 'src/semaphore/scripts.ts',
    find: 'if free >= tonumber(permits) then',
    replace: 'if true then',
    tests: [CORE],
    pattern: '^semaphores and latch core semaphore: at most N inside',
  },
  {
    id: 'fencing-increment',
    mechanism: 'every acquisition of a fenced lock increments the fencing token',
    file: 'src/fenced-lock/scripts.ts',
    find: "granted: \"return {1, tostring(redis.call('incr', fence))}\",",
    replace: "granted: \"return {1, tostring(redis.call('get', fence) or '0')}\",",
    tests: [CORE],
    pattern: '^fenced, fair and read-write locks core fenced lock tokens increase',
  },
  {
    id: 'read-write-exclusion',
    mechanism: 'a writer excludes readers and other writers',
    file: 'src/read-write-lock/scripts.ts',
    find: "if count == 0 and (side == 'write' or mode == 'write') and redis.call('hexists', lock, writeField) == 0 then",
    replace: 'if false then',
    tests: [CORE],
    pattern: '^fenced, fair and read-write locks core read-write lock: readers share',
  },
  {
    id: 'unlock-latch',
    mechanism: 'a retried unlock replays its first answer (unlock latch)',
    file: 'src/lock/lock.ts',
    find: "latchTtl: latches.ttlArg, retry: attempt > 1 ? '1' : '0', guard });",
    replace: "latchTtl: latches.ttlArg, retry: '0', guard });",
    tests: [CONTRACT],
    pattern: '^RLock contract a retried unlock is idempotent on a reentrant hold',
    quick: true,
  },
  {
    id: 'acquire-guard',
    mechanism: 'a retried acquire recognises its own lost grant (acquire guard, Lua)',
    file: 'src/lock/scripts.ts',
    find: 'if before ~= nil and count == before + 1 then',
    replace: 'if false then',
    tests: [CONTRACT],
    pattern: '^(RLock|FencedLock|RFairLock) contract a retried acquire after a lost grant',
    quick: true,
  },
  {
    id: 'acquire-guard-carried',
    mechanism: "the owner's next acquisition adopts a grant whose reply was lost (guard armed from the unsettled mark)",
    file: 'src/lock/lock.ts',
    find: 'armed: mark !== undefined && mark.until > started,',
    replace: 'armed: false,',
    tests: ['test/lock/lost-grant.test.ts'],
    pattern: '^a grant whose reply was lost RLock, in a context',
  },
  {
    id: 'unlock-waits-acquire',
    mechanism: "an unlock waits for the owner's acquisition in flight (no grant renewed after its release)",
    file: 'src/lock/lock.ts',
    find: 'if (inFlight) await inFlight;',
    replace: '',
    tests: [CORE],
    pattern: '^lockLost means lost, exactly once lock\\(\\) and unlock\\(\\) racing',
  },
  {
    id: 'fair-leave',
    mechanism: 'a fair-lock waiter that gave up leaves the queue',
    file: 'src/fair-lock/scripts.ts',
    find: "local removed = redis.call('lrem', queue, 0, owner)",
    replace: 'local removed = 0',
    tests: [CONTRACT],
    pattern: '^RFairLock contract an aborted wait rejects',
  },
  {
    id: 'redlock-drift',
    mechanism: 'RedLock subtracts the clock-drift margin from the validity',
    file: 'src/red-lock/red-lock.ts',
    find: 'const validUntil = start + lease - (DRIFT_FACTOR * lease + DRIFT_MS);',
    replace: 'const validUntil = start + lease;',
    tests: ['test/red-lock/red-lock.test.ts'],
    pattern: '^\\S+ takes a quorum of independent masters',
  },
  {
    id: 'abort-reason',
    mechanism: "an aborted wait rejects with the signal's reason at once",
    file: 'src/pubsub/channels.ts',
    find: "signal?.addEventListener('abort', onAbort, { once: true });",
    replace: "signal?.addEventListener('abort', () => { this.remove(waiter); if (waiter.timer) clearTimeout(waiter.timer); reject(new Error('aborted')); }, { once: true });",
    tests: [CONTRACT],
    pattern: '^RLock contract an aborted wait rejects',
  },
  {
    id: 'cross-kind-hash',
    mechanism: 'a hash lock refuses a name held by another kind (WrongTypeError)',
    file: 'src/lock/scripts.ts',
    find: 'if held[1] ~= ${kind} then return wrongKind(held[1]) end',
    replace: '',
    tests: [CONTRACT],
    pattern: '^one name, one kind a name held by a (RLock|FencedLock)',
    quick: true,
  },
  {
    id: 'cross-kind-read-write',
    mechanism: 'a read-write lock refuses a hash of another kind (WrongTypeError)',
    file: 'src/read-write-lock/scripts.ts',
    find: 'if not mode then return wrongKind(marks[2]) end',
    replace: '',
    tests: [CONTRACT],
    pattern: '^one name, one kind a name held by a RLock',
  },
  {
    id: 'wait-bound',
    mechanism: 'a call with a wait time settles within it while the connection is down (offline queue)',
    file: 'src/redis/executor.ts',
    find: 'const deadline = options.deadline !== undefined && Number.isFinite(options.deadline) ? options.deadline + DEADLINE_GRACE_MS : undefined;',
    replace: 'const deadline = undefined;',
    tests: ['test/wait-bound.test.ts'],
  },
  {
    id: 'shutdown-tells',
    mechanism: 'shutdown tells every renewed hold it is lost (signal aborts, lockLost)',
    file: 'src/watchdog/watchdog.ts',
    find: "for (const renewal of renewed) this.tell(renewal.name, renewal.key, [renewal.owner], 'shutdown', [...renewal.controllers]);",
    replace: '',
    tests: [CORE],
    pattern: '^shutdown\\(\\) tells every live hold',
  },
];
