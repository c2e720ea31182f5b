import { InvalidArgumentError } from '../errors.js';
import type { WakeRule } from '../pubsub/channel.js';
import type { Attempt } from '../pubsub/wait.js';
import { leaseMillis, requireUnit, type TimeUnit } from '../time.js';

/**
 * What both semaphores share: argument checks, the wake-up rule of their channel and the reply of their
 * acquire scripts.
 */

/** A semaphore message carries the new number of free permits: that many permits' worth of waiters wake. */
export const WAKE_BY_PERMITS: WakeRule = (message) => {
  const free = Number(message);
  return free > 0 ? free : 0;
};

/** A number of permits to take or give back: an integer from 1 up, else `InvalidArgumentError`. */
export function permitCount(value: unknown, argument = 'permits'): number {
  return integer(value, argument, 1, 'a whole number of permits >= 1');
}

/** A permit total (`trySetPermits`, `setPermits`): an integer from 0 up, else `InvalidArgumentError`. */
export function permitTotal(value: unknown, argument = 'permits'): number {
  return integer(value, argument, 0, 'a whole number of permits >= 0');
}

/** A change of the permit total (`addPermits`): any integer, negative to take permits away. */
export function permitDelta(value: unknown, argument = 'permits'): number {
  return integer(value, argument, Number.MIN_SAFE_INTEGER, 'a whole number (negative to remove permits)');
}

function integer(value: unknown, argument: string, min: number, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    // A whole number beyond 2^53 − 1 is one, but not exactly representable: say which limit it broke.
    const huge = typeof value === 'number' && Number.isFinite(value) ? value : 0;
    const limit = huge > Number.MAX_SAFE_INTEGER ? `, at most ${Number.MAX_SAFE_INTEGER} (Number.MAX_SAFE_INTEGER)` : huge < -Number.MAX_SAFE_INTEGER ? `, at least -${Number.MAX_SAFE_INTEGER} (-Number.MAX_SAFE_INTEGER)` : '';
    throw new InvalidArgumentError(argument, `must be ${what}${limit}; got ${typeof value === 'number' ? value : typeof value}`);
  }
  return value;
}

/**
 * A positive time in whole ms (a time to live, an extension): `leaseMillis`'s rules with `unit` required,
 * and -1 (a lease's "watchdog") refused. Throws `InvalidArgumentError` naming `argument`.
 */
export function positiveTime(value: number, unit: TimeUnit | undefined, argument: string): number {
  const ms = value === -1 ? undefined : leaseMillis(value, requirePermitUnit(unit), argument);
  if (ms === undefined) throw new InvalidArgumentError(argument, `must be a positive time; got ${value}`);
  return ms;
}

/** The unit that must come with a time argument of a semaphore method. */
export const requirePermitUnit = (unit: TimeUnit | undefined): TimeUnit => requireUnit(unit, 'tryAcquire(1, "seconds")');

/**
 * What a permit-taking script answered: the permits were taken, or not, with the ms to wait (-1: no
 * expiry) and whether the semaphore's permits were never set (`unset`: its key does not exist).
 */
export type Take = true | { readonly retryAfterMs: number; readonly unset: boolean };

/**
 * Parses an acquire script's reply: the integer 1 when the permits were taken, else the table
 * `{ free permits, ms until the nearest permit expires or -1 [, 0 when the semaphore does not exist] }`.
 */
export const takeReply = (reply: unknown): Take => (Array.isArray(reply) ? { retryAfterMs: Number(reply[1]), unset: reply[2] === 0 } : true);

/** The wait loop's outcome of one attempt that answered `take`, with `value` when it took the permits. */
export function acquireOutcome<T>(take: Take, value: T): Attempt<T> {
  return take === true ? { acquired: true, value } : { acquired: false, retryAfterMs: take.retryAfterMs };
}

/** Whether one of the attempts that answered after the caller gave up took permits (and must be undone). */
export const tookPermits = (takes: readonly Take[]): boolean => takes.includes(true);
