/**
 * The arguments of a hash lock's acquisition calls: `AcquireOptions` (and its `identifier` check) and
 * Redisson's `tryLock(waitTime, leaseTime, unit)` forms.
 */
import { InvalidArgumentError } from '../errors.js';
import type { ObjectKind } from '../kinds.js';
import { optionKeys } from '../option-keys.js';
import { leaseMillis, refuseOptionsObject, refuseStringTime, requireUnit, timeFields, waitMillis, type TimeUnit } from '../time.js';

/**
 * Options of `acquire()` and `LockClient.withLock()`. Give each time in milliseconds (`waitMs`,
 * `leaseMs`) or with its unit (`waitTime`/`leaseTime` and `unit`): `{ leaseMs: 5000 }` and
 * `{ leaseTime: 5, unit: 'seconds' }` are the same lease; `{ leaseTime: 5 }` alone is refused.
 */
export interface AcquireOptions {
  /**
   * How long to wait for the lock, in milliseconds: 0 for one attempt; omitted or `Infinity` to wait until
   * it is free. Negative values throw `InvalidArgumentError` (`tryLock(-1, …)`, Redisson's form, makes one attempt).
   */
  waitMs?: number;
  /**
   * Lease in milliseconds: the lock expires this long after the acquisition (counted from when the
   * granting attempt was sent), whatever its holder does. Omitted or -1: the watchdog renews it while held.
   */
  leaseMs?: number;
  /** `waitMs` in `unit` (required with it), as Redisson's `tryLock(waitTime, leaseTime, unit)`. Not together with `waitMs`. */
  waitTime?: number;
  /** `leaseMs` in `unit` (required with it). Not together with `leaseMs`. */
  leaseTime?: number;
  /** Unit of `waitTime` and `leaseTime`; required with them, refused without them. */
  unit?: TimeUnit;
  /** Aborts the wait; the promise then rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * The owner id written in Redis for this hold instead of `clientId:contextId` (redis-semaphore's
   * `identifier`): a non-empty string of at most 200 characters, other than `kind` and `mode`. Pass it to
   * another process so that it can take the hold over (`acquiredExternally`). Unique per hold: two
   * acquisitions with one identifier are one owner (the second reenters). Not for read-write locks.
   */
  identifier?: string;
  /**
   * With `identifier` (redis-semaphore's `acquiredExternally`): the lock is already held under that
   * identifier, by another process that hands it over. Nothing is acquired: the hold is checked in Redis
   * and given this call's lease (or the watchdog's, then renewed by this client), and the handle releases
   * it. Throws `LockLostError` (reason `'expired'`) when that identifier holds no lock. The process that
   * acquired it should then call `handle.stopRefresh()`.
   */
  acquiredExternally?: boolean;
}

/** The keys of `AcquireOptions` (any other key is refused: `refuseUnknownKeys`). */
export const ACQUIRE_OPTION_KEYS = optionKeys<AcquireOptions>({ ...timeFields(), identifier: true, acquiredExternally: true });

/** Field names of lock hashes that are not owners. */
const RESERVED_FIELDS = new Set(['kind', 'mode']);

/**
 * The `identifier` of acquire options for a lock of `kind`, checked (see `AcquireOptions`); undefined
 * when none is given. Throws `InvalidArgumentError`.
 */
export function checkIdentifier(options: AcquireOptions, kind: ObjectKind): string | undefined {
  const { identifier, acquiredExternally } = options;
  if (acquiredExternally !== undefined && typeof acquiredExternally !== 'boolean') throw new InvalidArgumentError('acquiredExternally', 'must be a boolean');
  if (identifier === undefined) {
    if (acquiredExternally) throw new InvalidArgumentError('acquiredExternally', 'needs the identifier the lock was acquired with: acquire({ identifier, acquiredExternally: true })');
    return undefined;
  }
  if (typeof identifier !== 'string' || identifier === '' || identifier.length > 200 || RESERVED_FIELDS.has(identifier)) {
    throw new InvalidArgumentError('identifier', 'must be a non-empty string of at most 200 characters, other than "kind" and "mode"');
  }
  if (kind === 'read-write-lock') throw new InvalidArgumentError('identifier', 'is not supported by read-write locks');
  return identifier;
}

/** Throws `InvalidArgumentError` when a time was given to a lock method without its unit. */
export const requireLockUnit = (unit: TimeUnit | undefined): TimeUnit => requireUnit(unit, 'tryLock(1, 5, "seconds")');

/** `tryLock(…)` arguments → [wait ms (0: one attempt), lease ms or undefined for the watchdog]. */
export function tryLockTimes(waitTime: number | undefined, leaseOrUnit: number | TimeUnit | undefined, unit: TimeUnit | undefined): [number, number | undefined] {
  if (waitTime === undefined) return [0, undefined];
  refuseOptionsObject(waitTime, 'waitTime', 'tryLock(1, 5, "seconds")', 'acquire(options)');
  if (unit !== undefined) refuseStringTime(leaseOrUnit, 'leaseTime', 'tryLock(0, 5, "seconds")');
  if (typeof leaseOrUnit === 'string' || leaseOrUnit === undefined) {
    return [waitMillis(waitTime, requireLockUnit(leaseOrUnit)), undefined];
  }
  const u = requireLockUnit(unit);
  return [waitMillis(waitTime, u), leaseMillis(leaseOrUnit, u)];
}
