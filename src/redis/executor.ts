import pRetry from 'p-retry';
import type { Logger } from 'pino';
import { ClientClosedError, CrossSlotError, PermissionError, RedisCommandError, RedisUnavailableError, RelockError, WrongTypeError } from '../errors.js';
import { wrongTypeError, type KindEntry, type ObjectKind } from '../kinds.js';
import { monotonic, setLongTimeout } from '../time.js';
import { outsideContexts } from '../context.js';
import type { Connection } from './connection.js';
import { classify, ResponseTimeoutError } from './failures.js';
import { refusal } from './functions.js';

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

export const DEFAULT_RETRY: RetryPolicy = Object.freeze({ retries: 4, minTimeout: 50, maxTimeout: 1000, factor: 2, randomize: true });

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
   * after its caller gave up must be undone).
   */
  onLateResults?: ((values: T[]) => void) | undefined;
  /** Called when an attempt failed in a way that leaves its effect unknown. */
  onAmbiguous?: (() => void) | undefined;
}

/** One attempt in flight, raced with its deadline (and abort signal). */
class InFlight<T> {
  /** Cleared when the call settles, so that a settled call waiting for the next sweep holds nothing. */
  private source: Promise<T> | undefined;
  private resolveCall: ((value: T) => void) | undefined;
  private rejectCall: ((error: unknown) => void) | undefined;
  private dangling: Array<Promise<T>> | undefined;
  private signal: AbortSignal | undefined;
  /** Gives the attempt up at its caller's deadline (see `RunOptions.deadline`), if that comes first. */
  cutTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly at: number,
    source: Promise<T>,
    resolve: (value: T) => void,
    reject: (error: unknown) => void,
    dangling: Array<Promise<T>> | undefined,
    signal: AbortSignal | undefined,
  ) {
    this.source = source;
    this.resolveCall = resolve;
    this.rejectCall = reject;
    this.dangling = dangling;
    this.signal = signal;
  }

  get settled(): boolean {
    return this.source === undefined;
  }

  resolve(value: T): void {
    const resolve = this.resolveCall;
    if (this.settle()) resolve!(value);
  }

  reject(error: unknown): void {
    const reject = this.rejectCall;
    if (this.settle()) reject!(error);
  }

  /** Stops waiting for the source: it may still succeed later, so it goes to `dangling`. */
  giveUp(error: unknown): void {
    const { source, dangling, rejectCall } = this;
    if (!this.settle()) return;
    source!.catch(() => {});
    dangling?.push(source!);
    rejectCall!(error);
  }

  /** The abort signal's listener. */
  handleEvent(): void {
    this.giveUp(this.signal?.reason);
  }

  /** Forgets everything; false when already settled. (One object per attempt: no separate parts record.) */
  private settle(): boolean {
    if (this.source === undefined) return false;
    this.signal?.removeEventListener('abort', this);
    if (this.cutTimer) clearTimeout(this.cutTimer);
    this.source = this.resolveCall = this.rejectCall = this.dangling = this.signal = undefined;
    return true;
  }
}

/**
 * `error`, with this realm's `Error.prototype` when it is an error made in another realm (Node's own
 * socket errors, such as ECONNREFUSED, under a VM sandbox like jest's): p-retry retries only values that
 * are `instanceof Error` and treats anything else as a bug in the caller.
 */
function ownRealm(error: unknown): unknown {
  if (error instanceof Error || typeof (error as Error | null)?.message !== 'string') return error;
  return Object.setPrototypeOf(error, Error.prototype);
}

/**
 * Runs Redis calls with the retry policy and a response timeout. Deadlines of calls in flight are
 * checked by one coarse timer per client (not a timer per command), which runs only while calls are
 * in flight.
 */
export class Executor {
  private inFlight: Array<InFlight<unknown>> = [];
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;
  /** Aborted by `close()`: stops retry backoffs at once, so no timer outlives the client. */
  private readonly closing = new AbortController();
  /** Told of each attempt `run` sends, by operation name (the observer's `relock.redis.requests`; set only while metrics are recorded). */
  onRequest: ((operation: string) => void) | undefined;

  constructor(
    readonly connection: Connection,
    private readonly policy: RetryPolicy,
    /** Milliseconds to wait for one reply before treating the call as failed (ambiguous). */
    readonly responseTimeout: number,
    private readonly log: Logger,
    /** Every kind of object (the client's descriptors), to name them in a `WrongTypeError`. */
    private readonly kinds: readonly KindEntry[],
  ) {}

  /**
   * Runs `call` (one attempt per invocation) with retries, mapping the final failure to a relock error.
   * The first attempt runs directly; p-retry takes over only after a retryable failure (`retry`, a
   * function of its own so that the common path keeps a small frame), so it costs one promise and no timer.
   */
  async run<T>(operation: string, call: (attempt: number) => Promise<T>, options: RunOptions<T>): Promise<T> {
    if (this.closed) throw new ClientClosedError();
    const dangling: Array<Promise<T>> | undefined = options.onLateResults ? [] : undefined;
    const deadline = options.deadline !== undefined && Number.isFinite(options.deadline) ? options.deadline + DEADLINE_GRACE_MS : undefined;
    try {
      this.onRequest?.(operation);
      return await this.bounded(call(1), this.responseTimeout, options.signal, dangling, deadline);
    } catch (error) {
      return this.retry(operation, call, options, error, dangling, deadline);
    }
  }

  /** `run` after its first attempt failed with `first`: retries it when the policy says so, else maps the error. */
  private async retry<T>(operation: string, call: (attempt: number) => Promise<T>, options: RunOptions<T>, first: unknown, dangling: Array<Promise<T>> | undefined, deadline: number | undefined): Promise<T> {
    try {
      if (!this.retryable(first, options)) throw first;
      const signal = options.signal ? AbortSignal.any([options.signal, this.closing.signal]) : this.closing.signal;
      return await pRetry(
        (attempt) => {
          if (attempt === 1) throw ownRealm(first);
          if (this.closed) throw new ClientClosedError();
          this.onRequest?.(operation);
          return this.bounded(call(attempt), this.responseTimeout, signal, dangling, deadline).catch((error: unknown) => {
            throw ownRealm(error);
          });
        },
        {
          ...this.policy,
          signal,
          maxRetryTime: options.deadline === undefined ? Infinity : Math.max(0, options.deadline - monotonic()),
          shouldRetry: ({ error, attemptNumber }) => attemptNumber === 1 || this.retryable(error, options),
          onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
            if (retriesLeft > 0) this.log.debug({ operation, attempt: attemptNumber, err: error }, 'Redis call failed; retrying');
          },
        },
      );
    } catch (error) {
      if (options.onLateResults && dangling && dangling.length > 0) {
        const report = options.onLateResults;
        void Promise.allSettled(dangling).then((results) => {
          const values = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
          if (values.length > 0) report(values);
        });
      }
      throw await this.translate(operation, error, options);
    }
  }

  private retryable(error: unknown, options: RunOptions<never>): boolean {
    // An abort is the caller's, not a Redis failure: whatever its reason looks like, it is not retried.
    if (options.signal?.aborted) return false;
    const failure = classify(error);
    if (failure === 'ambiguous') options.onAmbiguous?.();
    return !this.closed && (failure === 'transient' || (failure === 'ambiguous' && options.idempotent));
  }

  /**
   * One attempt without retries, bounded by `timeoutMs` (a `ResponseTimeoutError` after it). Errors are
   * raw node-redis errors; classify them with `classify()`.
   */
  attempt<T>(promise: Promise<T>, timeoutMs = this.responseTimeout): Promise<T> {
    return this.bounded(promise, timeoutMs, undefined, undefined);
  }

  /** Stops the deadline timer; later calls fail with `ClientClosedError`. */
  close(): void {
    this.closed = true;
    this.closing.abort(new ClientClosedError());
    for (const call of this.inFlight) call.giveUp(new ClientClosedError());
    this.inFlight = [];
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /**
   * Races one attempt with the response timeout, the abort signal and `cutAt` (monotonic ms: the caller's
   * deadline plus grace, when it comes before the response timeout; an exact timer, the sweeper is coarse);
   * an attempt given up on goes to `dangling`.
   */
  private bounded<T>(promise: Promise<T>, timeoutMs: number, signal: AbortSignal | undefined, dangling: Array<Promise<T>> | undefined, cutAt?: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const now = monotonic();
      const call = new InFlight<T>(now + timeoutMs, promise, resolve, reject, dangling, signal);
      this.inFlight.push(call as InFlight<unknown>);
      if (!this.sweeper) this.armSweeper();
      if (signal) signal.addEventListener('abort', call, { once: true });
      if (cutAt !== undefined && cutAt < call.at) {
        const waited = Math.max(0, cutAt - now);
        call.cutTimer = outsideContexts(() =>
          setLongTimeout(() => {
            // Only a command Redis cannot be answering (the connection is down, node-redis queues it) is
            // given up early: a slow reply on a live connection keeps the response timeout, so that a
            // grant it carries (a fencing token) is not thrown away.
            if (this.connection.offline()) call.giveUp(new ResponseTimeoutError(Math.round(waited), true));
          }, waited),
        );
      }
      promise.then(
        (value) => call.resolve(value),
        (error: unknown) => call.reject(error),
      );
    });
  }

  /** One coarse timer while calls are in flight: expires overdue calls and forgets settled ones. */
  private armSweeper(): void {
    const period = Math.max(5, Math.min(50, this.responseTimeout / 4));
    this.sweeper = outsideContexts(() =>
      setInterval(() => {
        const now = monotonic();
        const calls = this.inFlight;
        let kept = 0;
        for (const call of calls) {
          if (!call.settled && call.at <= now) call.giveUp(new ResponseTimeoutError(Math.round(now - call.at + this.responseTimeout)));
          if (!call.settled) calls[kept++] = call;
        }
        calls.length = kept;
        if (kept === 0) {
          clearInterval(this.sweeper);
          this.sweeper = undefined;
        }
      }, period),
    );
    this.sweeper.unref();
  }

  private async translate(operation: string, error: unknown, options: Pick<RunOptions<unknown>, 'signal' | 'expects'>): Promise<unknown> {
    // Once the caller aborted, the call rejects with the signal's reason, as documented, whatever it ran into.
    if (options.signal?.aborted) return options.signal.reason;
    if (error instanceof RelockError) return error;
    switch (classify(error)) {
      case 'transient':
      case 'ambiguous':
        return new RedisUnavailableError(operation, { cause: error });
      case 'closed':
        return new ClientClosedError({ cause: error });
      case 'crossslot':
        return new CrossSlotError(`Redis refused ${operation}`, { cause: error });
      case 'wrongtype':
        return options.expects ? wrongTypeError(this.connection, this.kinds, error, options.expects.key, options.expects.kind) : new WrongTypeError('?', 'unknown', 'unknown', { cause: error });
      default: {
        if (this.closed) return new ClientClosedError({ cause: error });
        const denied = refusal(error, operation, operation);
        return denied instanceof PermissionError ? denied : new RedisCommandError(operation, { cause: error });
      }
    }
  }
}
