import { outsideContexts } from './context.js';
import { setLongTimeout } from './time.js';
import { InvalidArgumentError } from './errors.js';
import { optionKeys, refuseUnknownKeys } from './option-keys.js';

/**
 * Pauses between attempts of the objects that retry without pub/sub: the spin lock's backoff, and the
 * randomised delays of the multi-lock and RRedLock after a failed round.
 */

/** How a spin lock paces its attempts (Redisson's `LockOptions.ExponentialBackOff`). Every time is in milliseconds. */
export interface BackoffOptions {
  /** The first pause, in ms. Default 1. */
  initialDelay?: number;
  /** The longest pause, in ms. Default 128. */
  maxDelay?: number;
  /**
   * Growth of the pause per failed attempt: the next pause is the previous one times this, plus a random
   * jitter of 0 to n − 1 ms after the n-th failure, capped at `maxDelay`. Default 2.
   */
  multiplier?: number;
}

/** The keys of `BackoffOptions` (any other key is refused). */
const BACKOFF_KEYS = optionKeys<BackoffOptions>({ initialDelay: true, maxDelay: true, multiplier: true });

/** The spin lock's defaults, Redisson's: 1 ms, doubling, at most 128 ms. */
export const DEFAULT_BACKOFF: Readonly<Required<BackoffOptions>> = Object.freeze({ initialDelay: 1, maxDelay: 128, multiplier: 2 });

/**
 * Validates backoff options (`InvalidArgumentError` naming `options.<field>`) and fills in the defaults:
 * `initialDelay` > 0, `maxDelay` >= `initialDelay`, `multiplier` >= 1, all finite.
 */
export function resolveBackoff(options: BackoffOptions | undefined): Readonly<Required<BackoffOptions>> {
  if (options === undefined) return DEFAULT_BACKOFF;
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object such as { maxDelay: 64 }');
  refuseUnknownKeys(options, BACKOFF_KEYS, 'options.');
  const resolved = { ...DEFAULT_BACKOFF, ...options };
  const check = (field: keyof BackoffOptions, ok: (value: number) => boolean, rule: string): void => {
    const value = resolved[field];
    if (typeof value !== 'number' || !Number.isFinite(value) || !ok(value)) {
      throw new InvalidArgumentError(`options.${field}`, `must be a finite number ${rule}; got ${String(value)}`);
    }
  };
  check('initialDelay', (v) => v > 0, '> 0 (milliseconds)');
  check('maxDelay', (v) => v >= resolved.initialDelay, `>= initialDelay (${resolved.initialDelay} ms)`);
  check('multiplier', (v) => v >= 1, '>= 1');
  return Object.freeze(resolved);
}

/**
 * One wait's sequence of pauses (Redisson's `ExponentialBackOffPolicy`): `initialDelay` first, then each
 * pause is `previous × multiplier + random[0, failures)` ms, capped at `maxDelay`. The jitter grows with
 * every failed attempt, so waiters that started together drift apart; once at the cap the pause stays
 * `maxDelay`. With `initialDelay` = `maxDelay` it is Redisson's `ConstantBackOff`.
 */
export class ExponentialBackoff {
  private nextPause: number;
  private failures = 0;

  constructor(private readonly options: Readonly<Required<BackoffOptions>>) {
    this.nextPause = options.initialDelay;
  }

  /** The next pause in ms. */
  next(): number {
    const { maxDelay, multiplier } = this.options;
    if (this.nextPause >= maxDelay) return maxDelay;
    const pause = this.nextPause;
    this.nextPause = Math.min(maxDelay, pause * multiplier + Math.floor(Math.random() * ++this.failures));
    return pause;
  }
}

/**
 * The randomised delay after the `round`-th failed round (1, 2, …) of a multi-lock or RRedLock: uniform in
 * [0, min(`capMs`, `baseMs` × 2^(round − 1))) ("full jitter"). Two callers that collided pick different
 * delays, so one of them gets through first instead of both retrying in step (livelock).
 */
export function roundDelay(round: number, baseMs: number, capMs: number): number {
  return Math.random() * Math.min(capMs, baseMs * 2 ** Math.max(0, round - 1));
}

/**
 * Resolves after `ms` milliseconds, or rejects with `signal.reason` when `signal` aborts first. The timer
 * is created outside lock contexts and cleared on abort.
 */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = outsideContexts(() =>
      setLongTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
