import { InvalidArgumentError } from './errors.js';

/**
 * Time units accepted wherever a method takes `(value, unit)`, as in Redisson's `TimeUnit` arguments.
 * Short forms: `ms`, `s`, `m`, `h`.
 */
export type TimeUnit = 'milliseconds' | 'ms' | 'seconds' | 's' | 'minutes' | 'm' | 'hours' | 'h';

const FACTOR: Record<TimeUnit, number> = {
  milliseconds: 1, ms: 1, seconds: 1_000, s: 1_000, minutes: 60_000, m: 60_000, hours: 3_600_000, h: 3_600_000,
};

/** Milliseconds in one `unit`; throws `InvalidArgumentError` for an unknown unit. */
export function unitFactor(unit: TimeUnit | undefined, argument = 'unit'): number {
  const name = unit ?? 'milliseconds';
  const factor = typeof name === 'string' && Object.hasOwn(FACTOR, name) ? FACTOR[name] : undefined;
  if (factor === undefined) {
    throw new InvalidArgumentError(argument, `unknown time unit ${JSON.stringify(unit)}; use one of ${Object.keys(FACTOR).join(', ')}`);
  }
  return factor;
}

/** The longest lease in milliseconds: the largest integer a script argument carries exactly (`PEXPIRE` takes integers). */
export const MAX_LEASE_MS = Number.MAX_SAFE_INTEGER;

/**
 * A lease time in whole milliseconds (rounded up, so sub-millisecond leases stay positive), or
 * `undefined` for "no lease: the watchdog keeps the lock" when `value` is `-1` or omitted, as in
 * Redisson where a non-positive lease means watchdog. Other non-positive or non-finite values, and
 * leases over `MAX_LEASE_MS`, throw `InvalidArgumentError`.
 */
export function leaseMillis(value: number | undefined, unit: TimeUnit | undefined, argument = 'leaseTime'): number | undefined {
  if (value === undefined || value === -1) return undefined;
  const ms = Math.ceil(checkNumber(value, argument) * unitFactor(unit));
  if (!(ms > 0) || !Number.isFinite(ms)) {
    throw new InvalidArgumentError(argument, `must be a positive, finite time or -1 for "renewed by the watchdog"; got ${value}`);
  }
  if (ms > MAX_LEASE_MS) throw new InvalidArgumentError(argument, `must be at most ${MAX_LEASE_MS} ms; got ${value} ${unit ?? 'milliseconds'}`);
  return ms;
}

/**
 * Checks the options object of an acquire or await call: an object (or omitted), a known `unit` even
 * when no time is given, and `signal` an `AbortSignal`. Returns it (`{}` when omitted). Throws
 * `InvalidArgumentError` naming the problem.
 */
export function checkOptions<T extends { unit?: TimeUnit; signal?: AbortSignal }>(options: T | undefined): T {
  if (options === undefined) return {} as T;
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError('options', `expected an object such as { waitTime: 5, unit: 'seconds' }; got ${options === null ? 'null' : typeof options}`);
  }
  if (options.unit !== undefined) unitFactor(options.unit);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new InvalidArgumentError('signal', 'must be an AbortSignal');
  return options;
}

/**
 * A wait time in milliseconds: `0` for a single attempt, `Infinity` for no limit (also given as `-1`, as
 * Redisson's `tryLock(-1, …)`). Negative values other than -1 and NaN throw `InvalidArgumentError`.
 */
export function waitMillis(value: number | undefined, unit: TimeUnit | undefined, argument = 'waitTime'): number {
  if (value === undefined || value === -1 || value === Infinity) return Infinity;
  const ms = checkNumber(value, argument) * unitFactor(unit);
  if (ms < 0) throw new InvalidArgumentError(argument, `must be >= 0 (or -1 for no limit); got ${value}`);
  return ms;
}

function checkNumber(value: unknown, argument: string): number {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new InvalidArgumentError(argument, `must be a number; got ${typeof value === 'number' ? 'NaN' : typeof value}`);
  }
  return value;
}

/** Monotonic milliseconds (`performance.now()`): every deadline in relock uses this clock, never `Date.now()`. */
export const monotonic = (): number => performance.now();
