/**
 * What a call to Redis through the `Executor` is, as data: its options (`RunOptions`), a call as an object
 * of its own (`Request`) and the retry policy (`RetryPolicy`). A leaf: the primitives' request objects
 * implement these without importing the executor.
 */
import type { ObjectKind } from '../kinds.js';

/**
 * Retry policy for transient Redis errors, applied with p-retry: exponential backoff from `minTimeout`
 * to `maxTimeout` milliseconds, multiplied by `factor` after each failure, randomized (×1–2) when
 * `randomize` is true, at most `retries` retries after the first attempt.
 */
export interface RetryPolicy {
  /** Retries after the first attempt. Default 4. */
  retries: number;
  /** First backoff in milliseconds. Default 50. */
  minTimeout: number;
  /** Largest backoff in milliseconds. Default 1000. */
  maxTimeout: number;
  /** Backoff growth per retry. Default 2. */
  factor: number;
  /** Multiply each backoff by a random factor between 1 and 2. Default true. */
  randomize: boolean;
}

/** How long after the end of its caller's wait time an attempt in flight is given up (ms). */
export const DEADLINE_GRACE_MS = 30;

/** The retry policy used when `createLockClient` gets none (see `RetryPolicy`). */
export const DEFAULT_RETRY: RetryPolicy = Object.freeze({ retries: 4, minTimeout: 50, maxTimeout: 1000, factor: 2, randomize: true });

/** Options of one call (`Executor.run`; a `Request` carries them as its fields). */
export interface RunOptions<T> {
  /** May the call be repeated after an ambiguous failure (it may have run already)? */
  idempotent: boolean;
  /** Stops retrying and rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * Monotonic time after which no new attempt starts: the end of the caller's wait time (`waitDeadline`;
   * `-Infinity` for a single attempt). When it is finite and the connection is down then
   * (`Connection.offline()`), an attempt in flight is also given up at `deadline + DEADLINE_GRACE_MS`
   * when the response timeout would come later (a `ResponseTimeoutError` with `atDeadline`, ambiguous as
   * a lost reply), so that a call with a wait time settles within it even when the client queues commands
   * while Redis is down (node-redis's offline queue). A slow reply on a live connection keeps the
   * response timeout.
   */
  deadline?: number | undefined;
  /** The key and the kind of object calling, to name in a `WrongTypeError` when Redis answers WRONGTYPE. */
  expects?: { key: string; kind: ObjectKind } | undefined;
  /**
   * When the call finally fails (or is aborted) while attempts it stopped waiting for are still in
   * flight, called once with the results of those that later succeeded (an acquisition that went through
   * after its caller gave up must be undone). When the caller aborted (`signal`), the call's rejection
   * waits for those attempts and for a promise this returns (the undo), at most one response timeout, so
   * that a rejected acquisition leaves nothing its caller can observe.
   */
  onLateResults?: ((values: T[]) => void | Promise<void>) | undefined;
  /** Called when an attempt failed in a way that leaves its effect unknown. */
  onAmbiguous?: (() => void) | undefined;
}

/**
 * A Redis call as an object of its own (for `Executor.request`): its options are its fields, `send` sends
 * one attempt, `answered` (optional) turns the value of the attempt that succeeded into the call's result.
 * A primitive's hot path makes one such object per call and passes it as it is: no options object, no
 * closure per call, and its continuation runs in the reaction of the reply (no `.then` of its own).
 */
export interface Request<T, R = T> extends RunOptions<T> {
  /** Sends attempt number `attempt` (1 for the first); may throw, as a failed attempt. */
  send(attempt: number): Promise<T>;
  /**
   * The call's result from the value of its attempt that succeeded, before the call's promise settles;
   * may return a promise (the call then settles with it) or throw (the call rejects with that error, as
   * it is). Omitted: the value itself.
   */
  answered?(value: T): R | PromiseLike<R>;
  /** Called with the call's final error (after the retry policy, mapped to a relock error) just before the call rejects with it; not for an error `answered` throws. */
  failed?(error: unknown): void;
}
