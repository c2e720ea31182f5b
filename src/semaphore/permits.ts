import { InvalidArgumentError } from '../errors.js';
import type { WakeRule } from '../pubsub/channels.js';
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
    throw new InvalidArgumentError(argument, `must be ${what}; got ${typeof value === 'number' ? value : typeof value}`);
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
 * Reads an acquire script's reply: the integer 1 when the permits were taken, else the table
 * `{ free permits, ms until the nearest permit expires or -1 }`.
 */
export function acquireOutcome<T>(reply: unknown, value: T): Attempt<T> {
  if (Array.isArray(reply)) return { acquired: false, retryAfterMs: Number(reply[1]) };
  return { acquired: true, value };
}

/** Whether one of the replies that arrived after the caller gave up took permits (and must be undone). */
export const tookPermits = (replies: unknown[]): boolean => replies.some((reply) => !Array.isArray(reply));
