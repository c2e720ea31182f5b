import { ExponentialBackoff, pause, resolveBackoff, type BackoffOptions } from '../backoff.js';
import type { Core } from '../core.js';
import type { Grant, Refused, Waiter } from '../lock/lock.js';
import { RLock } from '../lock/lock.js';
import { laterAttempt, type Attempt } from '../pubsub/wait.js';
import { monotonic } from '../time.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RSpinLock`. */
    'spin-lock': true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RSpinLock`. */
    spin_lock: true;
  }
}

/**
 * Options of `LockClient.getSpinLock(name, options)`: how the waiter paces its attempts. Every time is in
 * milliseconds; the defaults are Redisson's `ExponentialBackOff` (1 ms, ×2, at most 128 ms). For
 * Redisson's `ConstantBackOff(64)` give `{ initialDelay: 64, maxDelay: 64 }`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- a name of its own, documented in the API reference
export interface SpinLockOptions extends BackoffOptions {}

/**
 * A reentrant lock that waits by polling instead of pub/sub (Redisson's `RSpinLock`): for Redis-compatible
 * stores and proxies without pub/sub, and for very large clusters where every unlock message costs.
 *
 * It is an `RLock` in every other respect: the same hash at `keyPrefix + name` (field = owner id, value =
 * hold count; `kind` = `spin-lock`), the same acquire script, reentrancy per context, the watchdog when no lease is given,
 * idempotent unlock, lost-reply guard. Only waiting and releasing differ:
 * - a waiter retries after a pause from an exponential backoff with growing random jitter
 *   (`SpinLockOptions`), each pause capped by the remaining wait time and by the holder's TTL (so a waiter
 *   gets in within a millisecond or so of a lease running out);
 * - nothing is subscribed (no subscriber connection is even opened) and an unlock publishes nothing.
 *
 * Keys: the lock hash and transient unlock latches `relock:unlock:{name}:<id>`; no channel. A name serves
 * one kind of object at a time: an `RLock` (or any other kind) asking for a name a spin lock holds fails
 * with `WrongTypeError` at once instead of waiting for an unlock that would publish nothing, and so does a
 * spin lock asking for a name another kind holds.
 *
 * Cost: a waiter sends one acquire script per attempt, so Redis work grows with waiting time (about
 * 8 attempts per second per waiter at the 128 ms cap), where an `RLock` waiter costs work only per release.
 */
export class RSpinLock extends RLock {
  /** The backoff settings in use (defaults filled in). */
  readonly backoff: Readonly<Required<SpinLockOptions>>;
  protected override readonly kind = 'spin-lock';
  /** @internal */
  override readonly metricKind = 'spin_lock';

  /** @internal Use `LockClient.getSpinLock(name, options)`. */
  constructor(core: Core, name: string, options?: SpinLockOptions) {
    super(core, name);
    this.backoff = resolveBackoff(options);
  }

  /** Unlocks publish nothing: no spin-lock waiter listens. */
  protected override releaseChannel(): string {
    return '';
  }

  /** @internal No channel: the spin lock waits without pub/sub. */
  override waitChannel(): undefined {
    return undefined;
  }

  /** @internal Polls after the refused first attempt `first`: pause `min(backoff, remaining wait, holder's TTL)`, attempt again. */
  override async waitAfter(waiter: Waiter, first: Refused): Promise<Grant | undefined> {
    const { deadline, signal } = waiter;
    const backoff = new ExponentialBackoff(this.backoff);
    for (let result: Attempt<Grant> | undefined = first; ; result = await laterAttempt(waiter.next(undefined))) {
      if (!result) return undefined;
      if (result.acquired) return result.value;
      const left = deadline === undefined ? Infinity : deadline - monotonic();
      if (left <= 0) return undefined;
      const ttl = result.retryAfterMs >= 0 ? result.retryAfterMs : Infinity;
      await pause(Math.min(backoff.next(), left, ttl), signal);
    }
  }
}
