import pRetry from 'p-retry';
import type { Logger } from 'pino';
import { ClientClosedError, RedisCommandError, RedisUnavailableError, RelockError, WrongTypeError } from '../errors.js';
import { monotonic } from '../time.js';
import { outsideContexts } from '../context.js';
import type { Connection } from './connection.js';
import { classify, ResponseTimeoutError } from './failures.js';

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

export const DEFAULT_RETRY: RetryPolicy = Object.freeze({ retries: 4, minTimeout: 50, maxTimeout: 1000, factor: 2, randomize: true });

export interface RunOptions<T> {
  /** May the call be repeated after an ambiguous failure (it may have run already)? */
  idempotent: boolean;
  /** Stops retrying and rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Monotonic time after which no new attempt starts. */
  deadline?: number | undefined;
  /** The key and type to name in a `WrongTypeError` when Redis answers WRONGTYPE. */
  expects?: { key: string; type: string } | undefined;
  /**
   * When the call finally fails (or is aborted) while attempts it stopped waiting for are still in
   * flight, called once with the results of those that later succeeded (an acquisition that went through
   * after its caller gave up must be undone).
   */
  onLateResults?: ((values: T[]) => void) | undefined;
  /** Called when an attempt failed in a way that leaves its effect unknown. */
  onAmbiguous?: (() => void) | undefined;
}

interface Pending {
  readonly at: number;
  readonly expire: () => void;
}

/**
 * Runs Redis calls with the retry policy and a response timeout. Deadlines of calls in flight are
 * checked by one coarse timer per client (not a timer per command), which runs only while calls are
 * in flight.
 */
export class Executor {
  private readonly pending = new Set<Pending>();
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    readonly connection: Connection,
    private readonly policy: RetryPolicy,
    /** Milliseconds to wait for one reply before treating the call as failed (ambiguous). */
    readonly responseTimeout: number,
    private readonly log: Logger,
  ) {}

  /** Runs `call` (one attempt per invocation) with retries, mapping the final failure to a relock error. */
  async run<T>(operation: string, call: (attempt: number) => Promise<T>, options: RunOptions<T>): Promise<T> {
    const { deadline, signal } = options;
    const dangling: Array<Promise<T>> = [];
    try {
      return await pRetry(
        (attempt) => {
          if (this.closed) throw new ClientClosedError();
          return this.bounded(call(attempt), this.responseTimeout, signal, dangling);
        },
        {
          ...this.policy,
          signal,
          maxRetryTime: deadline === undefined ? Infinity : Math.max(0, deadline - monotonic()),
          shouldRetry: ({ error }) => {
            const failure = classify(error);
            if (failure === 'ambiguous') options.onAmbiguous?.();
            return !this.closed && (failure === 'transient' || (failure === 'ambiguous' && options.idempotent));
          },
          onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
            if (retriesLeft > 0) this.log.debug({ operation, attempt: attemptNumber, err: error }, 'Redis call failed; retrying');
          },
        },
      );
    } catch (error) {
      if (options.onLateResults && dangling.length > 0) {
        const report = options.onLateResults;
        void Promise.allSettled(dangling).then((results) => {
          const values = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
          if (values.length > 0) report(values);
        });
      }
      throw await this.translate(operation, error, options);
    }
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
    for (const entry of this.pending) entry.expire();
    this.pending.clear();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Races one attempt with the response timeout and the abort signal; an attempt given up on goes to `dangling`. */
  private bounded<T>(promise: Promise<T>, timeoutMs: number, signal: AbortSignal | undefined, dangling: Array<Promise<T>> | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (): boolean => {
        if (settled) return false;
        settled = true;
        this.pending.delete(entry);
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      const giveUp = (error: unknown): void => {
        if (!finish()) return;
        reject(error);
        promise.catch(() => {});
        dangling?.push(promise);
      };
      const onAbort = (): void => giveUp(signal!.reason);
      const entry: Pending = { at: monotonic() + timeoutMs, expire: () => giveUp(new ResponseTimeoutError(timeoutMs)) };
      this.pending.add(entry);
      this.armSweeper();
      signal?.addEventListener('abort', onAbort, { once: true });
      promise.then(
        (value) => finish() && resolve(value),
        (error) => finish() && reject(error),
      );
    });
  }

  private armSweeper(): void {
    if (this.sweeper) return;
    const period = Math.max(5, Math.min(50, this.responseTimeout / 4));
    this.sweeper = outsideContexts(() =>
      setInterval(() => {
        if (this.pending.size === 0) {
          clearInterval(this.sweeper);
          this.sweeper = undefined;
          return;
        }
        const now = monotonic();
        for (const entry of this.pending) if (entry.at <= now) entry.expire();
      }, period),
    );
    this.sweeper.unref();
  }

  private async translate(operation: string, error: unknown, options: Pick<RunOptions<unknown>, 'signal' | 'expects'>): Promise<unknown> {
    if (error instanceof RelockError) return error;
    if (options.signal?.aborted && error === options.signal.reason) return error;
    switch (classify(error)) {
      case 'transient':
      case 'ambiguous':
        return new RedisUnavailableError(operation, { cause: error });
      case 'closed':
        return new ClientClosedError({ cause: error });
      case 'wrongtype': {
        const key = options.expects?.key ?? '?';
        const actual = options.expects ? await this.connection.send(key, ['TYPE', key]).catch(() => 'unknown') : 'unknown';
        return new WrongTypeError(key, String(actual), options.expects?.type ?? 'type', { cause: error });
      }
      default:
        return this.closed ? new ClientClosedError({ cause: error }) : new RedisCommandError(operation, { cause: error });
    }
  }
}
