import type { LockClient } from '../client.js';
import { runInContext } from '../context.js';
import { InvalidArgumentError } from '../errors.js';
import type { RLock } from '../lock/lock.js';
import { refuseUnknownKeys } from '../option-keys.js';

/**
 * Which lock a framework helper takes: `'lock'` (`getLock`, reentrant), `'fair'` (`getFairLock`, first
 * come first served), `'read'`/`'write'` (the two sides of `getReadWriteLock`), `'fenced'`
 * (`getFencedLock`: the held lock's `token` is the fencing token).
 */
export type LockKind = 'lock' | 'fair' | 'read' | 'write' | 'fenced';

/** Options of the framework helpers (`withLock` for Express and Fastify, `@WithLock` for NestJS). Times in ms. */
export interface LockedRunOptions {
  /** Which lock to take (see `LockKind`). Default `'lock'`. */
  kind?: LockKind;
  /**
   * How long to wait for the lock, in ms: 0 for one attempt; omitted or `Infinity` waits until it is free.
   * When it runs out, `LockAcquireTimeoutError` is thrown (HTTP 409 with the shipped handlers).
   */
  waitMs?: number;
  /** Lease in ms (the lock expires this long after it was granted); omitted: the watchdog renews it while the work runs. */
  leaseMs?: number;
}

/** The lock a framework helper holds while the work runs. */
export interface HeldLock {
  /** The lock's name, as built from the template or function. */
  readonly name: string;
  /** Which lock is held. */
  readonly kind: LockKind;
  /** Aborts (reason `LockLostError`) when the lock is lost; relock does not stop the work, so pass it on. */
  readonly signal: AbortSignal;
  /** The fencing token of this acquisition (kind `'fenced'`), else `undefined`. */
  readonly token: bigint | undefined;
}

const KINDS: readonly LockKind[] = ['lock', 'fair', 'read', 'write', 'fenced'];

/** Throws `InvalidArgumentError` naming a bad or unknown option (checked when a route or method is declared). */
export function checkLockedRunOptions(options: LockedRunOptions | undefined): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'must be an object such as { waitMs: 0 }');
  refuseUnknownKeys(options, ['kind', 'waitMs', 'leaseMs']);
  if (options.kind !== undefined && !KINDS.includes(options.kind)) throw new InvalidArgumentError('kind', `must be one of ${KINDS.join(', ')}; got ${String(options.kind)}`);
}

function lockOf(client: LockClient, kind: LockKind, name: string): RLock {
  switch (kind) {
    case 'fair':
      return client.getFairLock(name);
    case 'read':
      return client.getReadWriteLock(name).readLock();
    case 'write':
      return client.getReadWriteLock(name).writeLock();
    case 'fenced':
      return client.getFencedLock(name);
    default:
      return client.getLock(name);
  }
}

/**
 * `LockClient.withLock` for every `LockKind`: runs `work(held)` in a new lock context holding the lock
 * `name` of `options.kind`, and releases it when `work` settles. A nested call on the same lock (in `work`
 * and everything it awaits) reenters. Throws `LockAcquireTimeoutError` when `waitMs` runs out, the errors
 * of `RLock.acquire`, `work`'s error (a failed release is then ignored: the watchdog stopped renewing, so
 * the lock ends with `lockWatchdogTimeout` or its lease), or the release's error when `work` succeeded.
 */
export function runLocked<T>(client: LockClient, name: string, options: LockedRunOptions | undefined, work: (held: HeldLock) => T | Promise<T>): Promise<T> {
  const kind = options?.kind ?? 'lock';
  return runInContext(async () => {
    const handle = await lockOf(client, kind, name).acquire(acquireOptions(options));
    let result: T;
    try {
      result = await work({ name, kind, signal: handle.signal, token: handle.token });
    } catch (error) {
      await handle.release().catch(() => {}); // work's error wins: the hold ends with its lease or the watchdog's stop
      throw error;
    }
    await handle.release();
    return result;
  });
}

function acquireOptions(options: LockedRunOptions | undefined): { waitMs?: number; leaseMs?: number } {
  const times: { waitMs?: number; leaseMs?: number } = {};
  if (options?.waitMs !== undefined) times.waitMs = options.waitMs;
  if (options?.leaseMs !== undefined) times.leaseMs = options.leaseMs;
  return times;
}
