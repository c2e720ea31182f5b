import { InvalidArgumentError } from './errors.js';
import { optionKeys, refuseUnknownKeys } from './option-keys.js';

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

/**
 * `unit`, or `InvalidArgumentError` when a time was given without its unit; `example` is a call of the
 * caller's with a unit, quoted in the message (`tryLock(1, 5, "seconds")`).
 */
export function requireUnit(unit: TimeUnit | undefined, example: string): TimeUnit {
  if (unit === undefined) throw new InvalidArgumentError('unit', `a time unit is required with a time, e.g. ${example}`);
  return unit;
}

/**
 * Throws `InvalidArgumentError` when `value`, the first argument of a method that takes positional times
 * (`tryLock`, `lock`, `tryAcquire`), is an object: an options object belongs to `instead` (`acquire(options)`),
 * and without this check it would be reported as a missing time unit. `call` names the method with an
 * example of its positional form.
 */
export function refuseOptionsObject(value: unknown, argument: string, call: string, instead: string): void {
  if (typeof value === 'object' && value !== null) {
    throw new InvalidArgumentError(argument, `got an object, but ${call.slice(0, call.indexOf('('))} takes positional arguments, e.g. ${call}; for options ({ waitMs, leaseMs, signal, … }) use ${instead}`);
  }
}

/**
 * Throws `InvalidArgumentError` when `value`, a time argument followed by its unit (the lease of
 * `tryLock(wait, lease, unit)`), is a string: `tryLock(0, "5", "s")` would otherwise read "5" as the unit
 * and report an unknown unit. `call` is an example of the right form.
 */
export function refuseStringTime(value: unknown, argument: string, call: string): void {
  if (typeof value === 'string') throw new InvalidArgumentError(argument, `must be a number; got the string ${JSON.stringify(value)} (e.g. ${call})`);
}

/** The longest lease in milliseconds: the largest integer a script argument carries exactly (`PEXPIRE` takes integers). */
export const MAX_LEASE_MS = Number.MAX_SAFE_INTEGER;

/**
 * A lease time in whole milliseconds (rounded up: 1.5 ms is 2 ms), or `undefined` for "no lease: the
 * watchdog keeps the lock" when `value` is `-1` or omitted, as in Redisson where a non-positive lease
 * means watchdog. Other non-positive or non-finite values, leases under 1 ms (a hold that would be gone
 * before its caller heard of it: surely a unit mistake), and leases over `MAX_LEASE_MS`, throw
 * `InvalidArgumentError`.
 */
export function leaseMillis(value: number | undefined, unit: TimeUnit | undefined, argument = 'leaseTime'): number | undefined {
  if (value === undefined || value === -1) return undefined;
  const exact = checkNumber(value, argument) * unitFactor(unit);
  const ms = Math.ceil(exact);
  if (!(ms > 0) || !Number.isFinite(ms)) {
    throw new InvalidArgumentError(argument, `must be a positive, finite time or -1 for "renewed by the watchdog"; got ${value}`);
  }
  if (exact < 1) throw new InvalidArgumentError(argument, `must be at least 1 ms; got ${value} ${unit ?? 'milliseconds'}`);
  if (ms > MAX_LEASE_MS) throw new InvalidArgumentError(argument, `must be at most ${MAX_LEASE_MS} ms; got ${value} ${unit ?? 'milliseconds'}`);
  return ms;
}

/**
 * The time fields of an options object (`acquire`, `await`, `withLock`): a plain number is milliseconds
 * only under a name that says so (`waitMs`, `leaseMs`); `waitTime` and `leaseTime` are accepted only
 * together with their `unit`, so that `{ leaseTime: 5 }` can never mean 5 ms to one reader and 5 s to another.
 */
export interface TimeOptions {
  waitMs?: number;
  waitTime?: number;
  leaseMs?: number;
  leaseTime?: number;
  unit?: TimeUnit;
  signal?: AbortSignal;
}

/** The keys of `TimeOptions`: the options of a call that takes only times and a signal (a multi-lock's `acquire`). */
export const TIME_OPTION_KEYS = optionKeys<TimeOptions>(timeFields());

/** The keys of `TimeOptions` as the record `optionKeys` takes, to spread into the record of an options type that extends them. */
export function timeFields(): { readonly [K in keyof Required<TimeOptions>]: true } {
  return { waitMs: true, waitTime: true, leaseMs: true, leaseTime: true, unit: true, signal: true };
}

/**
 * Checks the options object of an acquire or await call: an object (or omitted) with no key outside
 * `known` (the keys of its options type, see `refuseUnknownKeys`), a known `unit`, the
 * time fields (`TimeOptions`: `waitTime`/`leaseTime` only with `unit`, not both `waitMs` and
 * `waitTime`, no `unit` without a `waitTime` or `leaseTime`), and `signal` an `AbortSignal`. Returns it
 * (`{}` when omitted). Throws `InvalidArgumentError` naming the problem and the call to write instead.
 */
export function checkOptions<T extends TimeOptions>(options: T | undefined, known: readonly string[]): T {
  if (options === undefined) return {} as T;
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError('options', `expected an object such as { waitMs: 5000 } or { waitTime: 5, unit: 'seconds' }; got ${options === null ? 'null' : typeof options}`);
  }
  refuseUnknownKeys(options, known);
  if (options.unit !== undefined) unitFactor(options.unit);
  checkTimePair(options, 'wait');
  checkTimePair(options, 'lease');
  if (options.unit !== undefined && options.waitTime === undefined && options.leaseTime === undefined) {
    throw new InvalidArgumentError('unit', 'applies only to waitTime and leaseTime, and neither is given (waitMs and leaseMs are always milliseconds)');
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new InvalidArgumentError('signal', 'must be an AbortSignal');
  return options;
}

/** `waitMs` xor `waitTime` (or lease), and `waitTime` only with `unit`; the message shows both right forms with the caller's number. */
function checkTimePair(options: TimeOptions, what: 'wait' | 'lease'): void {
  const [msName, timeName] = [`${what}Ms`, `${what}Time`] as const;
  const time = options[timeName];
  if (time === undefined) return;
  if (options[msName] !== undefined) throw new InvalidArgumentError(timeName, `give ${msName} (milliseconds) or ${timeName} with unit, not both`);
  if (options.unit === undefined) {
    const n = typeof time === 'number' && Number.isFinite(time) ? time : 5;
    throw new InvalidArgumentError(
      timeName,
      `a plain number is ambiguous without a unit: write { ${msName}: ${n} } for ${n} milliseconds, or { ${timeName}: ${n}, unit: 'seconds' } for ${n} seconds`,
    );
  }
}

/**
 * The wait time of checked options (`checkOptions`) in ms: `waitMs`, or `waitTime` in `unit`. Omitted or
 * `Infinity`: wait until free (the only "no limit" of relock's options); `0`: one attempt. A negative
 * wait throws `InvalidArgumentError`: in Redisson's positional `tryLock(-1, …)` it means one attempt, so
 * an options object refuses it rather than guess (see `waitMillis`).
 */
export function optionWait(options: TimeOptions): number {
  const [value, unit, argument] = options.waitTime !== undefined ? [options.waitTime, options.unit, 'waitTime'] : [options.waitMs, 'milliseconds' as const, 'waitMs'];
  if (value === undefined || value === Infinity) return Infinity;
  const ms = checkNumber(value, argument) * unitFactor(unit);
  if (ms < 0) throw new InvalidArgumentError(argument, `must be >= 0 (0: one attempt), or omitted / Infinity to wait until free; got ${value}`);
  return ms;
}

/** The lease of checked options (`checkOptions`) in ms, or `undefined` for the watchdog: `leaseMs`, or `leaseTime` in `unit`; see `leaseMillis`. */
export function optionLease(options: TimeOptions): number | undefined {
  return options.leaseTime !== undefined ? leaseMillis(options.leaseTime, options.unit, 'leaseTime') : leaseMillis(options.leaseMs, 'milliseconds', 'leaseMs');
}

/**
 * A positional wait time (`tryLock(waitTime, …)`, `tryAcquire(…, waitTime, unit)`, `await(waitTime, unit)`)
 * in milliseconds, as Redisson's: a wait <= 0 (including -1) makes exactly one attempt, and resolves to 0;
 * `Infinity` waits until free. NaN and non-numbers throw `InvalidArgumentError`. To wait until free use
 * `lock()` or an options object without a wait time (`optionWait`).
 */
export function waitMillis(value: number | undefined, unit: TimeUnit | undefined, argument = 'waitTime'): number {
  const ms = checkNumber(value, argument) * unitFactor(unit);
  return ms > 0 ? ms : 0;
}

function checkNumber(value: unknown, argument: string): number {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new InvalidArgumentError(argument, `must be a number; got ${typeof value === 'number' ? 'NaN' : typeof value}`);
  }
  return value;
}

/** Monotonic milliseconds (`performance.now()`): every deadline in relock uses this clock, never `Date.now()`. */
export const monotonic = (): number => performance.now();

/** The longest delay `setTimeout` honours (ms, 2^31 − 1, about 24.8 days); Node fires a longer one after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * `setTimeout(fn, ms)` for any delay, including ones longer than `MAX_TIMER_MS` (a 30-day lease) and
 * `Infinity` (never fires): a longer delay runs in equal steps of at most `MAX_TIMER_MS`, each restarting
 * the same timer (`refresh()`), so the returned handle works with `clearTimeout` and `unref()` as usual.
 * Measured on `monotonic()`; the last step fires when less than half a step is left (a timer may fire a
 * millisecond early), so a long delay may end up to a few ms early. A negative or NaN `ms` counts as 0.
 * Not bound to the caller's lock context only if the caller creates it outside (`outsideContexts`).
 */
export function setLongTimeout(fn: () => void, ms: number): NodeJS.Timeout {
  const delay = ms > 0 ? ms : 0;
  if (delay <= MAX_TIMER_MS) return setTimeout(fn, delay);
  const step = Number.isFinite(delay) ? delay / Math.ceil(delay / MAX_TIMER_MS) : MAX_TIMER_MS;
  const due = monotonic() + delay;
  const timer = setTimeout(() => {
    if (due - monotonic() > step / 2) timer.refresh();
    else fn();
  }, step);
  return timer;
}
