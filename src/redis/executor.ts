import { setMaxListeners } from 'node:events';
import pRetry from 'p-retry';
import type { Logger } from 'pino';
import { ClientClosedError, CrossSlotError, PermissionError, RedisCommandError, RedisUnavailableError, RelockError, WrongTypeError } from '../errors.js';
import { wrongTypeError, type KindEntry } from '../kinds.js';
import { monotonic, setLongTimeout } from '../time.js';
import { outsideContexts } from '../context.js';
import type { Connection } from './connection.js';
import { classify, ResponseTimeoutError } from './failures.js';
import { refusal } from './functions.js';
import { DEADLINE_GRACE_MS, type Request, type RetryPolicy, type RunOptions } from './requests.js';

export { DEADLINE_GRACE_MS, DEFAULT_RETRY, type Request, type RetryPolicy, type RunOptions } from './requests.js';

/** What the executor's sweeper watches: a call (or an attempt) in flight, due by `at` (monotonic ms). */
interface Watched {
  readonly at: number;
  readonly settled: boolean;
  giveUp(error: unknown): void;
}

/**
 * The first attempt of an `Executor.request` call (most calls make no other), in flight: raced with the
 * response timeout (the sweeper), the abort signal and the caller's deadline. Answered, its value goes
 * through `request.answered` into the call's promise; failed or given up, the call goes on with the retry
 * policy (`Executor.retry`). One object and one `.then` on the attempt (its two handlers, fewer bytes than
 * an async method's frame and await) besides the call's promise; settled, it holds nothing (the sweeper may
 * keep it until its next sweep).
 */
class FirstAttempt<T, R> implements Watched {
  readonly at: number;
  /** Cleared once the attempt is settled (answered, failed or given up), with everything below. */
  private source: Promise<T> | undefined;
  private request: Request<T, R> | undefined;
  /** The call's resolving functions, given by `startCall`. */
  resolve: ((value: R | PromiseLike<R>) => void) | undefined;
  reject: ((error: unknown) => void) | undefined;
  /** Gives the attempt up at its caller's deadline (see `RunOptions.deadline`), if that comes first. */
  private cutTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly executor: Executor,
    private readonly operation: string,
    request: Request<T, R>,
    /** The caller's deadline plus grace (monotonic ms), when finite. */
    private readonly deadline: number | undefined,
  ) {
    this.at = monotonic() + executor.responseTimeout;
    this.request = request;
  }

  get settled(): boolean {
    return this.source === undefined;
  }

  /** Sends the attempt (a synchronous throw counts as a failed attempt). */
  start(): void {
    const { executor } = this;
    const request = this.request!;
    executor.onRequest?.(this.operation);
    let source: Promise<T>;
    try {
      source = request.send(1);
    } catch (error) {
      this.retry(error, undefined);
      return;
    }
    this.source = source;
    executor.watch(this);
    request.signal?.addEventListener('abort', this, { once: true });
    const cutAt = this.deadline;
    if (cutAt !== undefined && cutAt < this.at) this.cutTimer = executor.cutTimer(this, cutAt);
    source.then(
      (value) => this.answered(value),
      (error: unknown) => this.failed(error),
    );
  }

  /** The attempt failed with `error`: the rest of the call, unless it was given up on already. */
  private failed(error: unknown): void {
    if (this.settle()) this.retry(error, undefined);
  }

  /** The attempt answered `value`: settles the call with it, unless it was given up on already. */
  private answered(value: T): void {
    // Given up before it answered: a later success is the retry's business (`dangling`).
    if (!this.settle()) return;
    const { request, resolve, reject } = this;
    this.request = this.resolve = this.reject = undefined;
    answer(request!, resolve!, reject!, value);
  }

  /** Stops waiting for the attempt (response timeout, abort, deadline, shutdown): the call goes on with the retry policy. */
  giveUp(error: unknown): void {
    const source = this.source;
    if (!this.settle()) return;
    source!.catch(() => {});
    this.retry(error, this.request!.onLateResults ? [source!] : undefined);
  }

  /** The abort signal's listener. */
  handleEvent(): void {
    this.giveUp(this.request?.signal?.reason);
  }

  /** The first attempt failed with `error` (`dangling`: it was given up on): the rest of the call (retries, or the final error). */
  private retry(error: unknown, dangling: Array<Promise<T>> | undefined): void {
    const { request, resolve, reject } = this;
    this.request = this.resolve = this.reject = undefined;
    this.executor.retry(this.operation, request!, error, dangling, this.deadline).then(
      (value) => answer(request!, resolve!, reject!, value),
      (final: unknown) => {
        request!.failed?.(final);
        reject!(final);
      },
    );
  }

  /** Forgets the attempt's timers and listener; false when it was already settled. */
  private settle(): boolean {
    if (this.source === undefined) return false;
    this.request!.signal?.removeEventListener('abort', this);
    if (this.cutTimer) clearTimeout(this.cutTimer);
    this.source = undefined;
    return true;
  }
}

/** The first attempt whose call `started` makes the promise of: read at once by `startCall`, the promise's executor. */
let starting: FirstAttempt<unknown, unknown> | undefined;

/**
 * The executor of a call's promise (see `started`): gives the first attempt the promise's resolving
 * functions and starts it; a throw rejects the call, as in any promise executor. A module function that
 * reads `starting`, set just before: no closure and context per call.
 */
function startCall(resolve: (value: unknown) => void, reject: (error: unknown) => void): void {
  const attempt = starting!;
  starting = undefined;
  attempt.resolve = resolve;
  attempt.reject = reject;
  attempt.start();
}

/** The promise of the call whose first attempt is `attempt`, started (see `FirstAttempt.start`). */
function started<T, R>(attempt: FirstAttempt<T, R>): Promise<R> {
  starting = attempt as FirstAttempt<unknown, unknown>;
  return new Promise<unknown>(startCall) as Promise<R>;
}

/** Settles a call with `value` of its successful attempt: through `request.answered`, or as it is. */
function answer<T, R>(request: Request<T, R>, resolve: (value: R | PromiseLike<R>) => void, reject: (error: unknown) => void, value: T): void {
  if (!request.answered) {
    resolve(value as unknown as R);
    return;
  }
  try {
    resolve(request.answered(value));
  } catch (error) {
    reject(error);
  }
}

/** One later attempt (a retry) in flight, raced with its deadline (and abort signal). */
class InFlight<T> implements Watched {
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

/** `controller`, its signal freed of Node's listener limit (see `Executor.closing`). */
export function withoutListenerLimit(controller: AbortController): AbortController {
  setMaxListeners(0, controller.signal);
  return controller;
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
  private inFlight: Watched[] = [];
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;
  /**
   * Aborted by `close()`: stops retry backoffs at once, so no timer outlives the client. Every call in a
   * backoff listens to it (p-retry), so it has no listener limit: dozens at once during an outage are no
   * leak, and Node's MaxListenersExceededWarning would only alarm the user.
   */
  private readonly closing = withoutListenerLimit(new AbortController());
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
   * Runs `call` (one attempt per invocation) with retries, mapping the final failure to a relock error
   * (as `request`, with `options` as the request's fields).
   */
  run<T>(operation: string, call: (attempt: number) => Promise<T>, options: RunOptions<T>): Promise<T> {
    return this.request(operation, { ...options, send: call });
  }

  /**
   * Runs `request` (`send` once per attempt) with the retry policy and the response timeout, mapping the
   * final failure to a relock error; resolves to `request.answered(value)` (or the value). The first
   * attempt is sent at once, in no async frame: a call answered at once costs its promise and one `.then`
   * (see `FirstAttempt`), no timer (the shared sweeper bounds it). p-retry takes over only after a
   * retryable failure.
   */
  request<T, R = T>(operation: string, request: Request<T, R>): Promise<R> {
    if (this.closed) return Promise.reject(new ClientClosedError());
    const deadline = request.deadline !== undefined && Number.isFinite(request.deadline) ? request.deadline + DEADLINE_GRACE_MS : undefined;
    return started(new FirstAttempt(this, operation, request, deadline));
  }

  /** @internal Watches `call` until it settles: the sweeper gives it up when its `at` passes. */
  watch(call: Watched): void {
    this.inFlight.push(call);
    if (!this.sweeper) this.armSweeper();
  }

  /**
   * @internal The timer that gives `call` up at `cutAt` (monotonic ms: the caller's deadline plus grace),
   * when the connection is down then (see `RunOptions.deadline`).
   */
  cutTimer(call: Watched, cutAt: number): NodeJS.Timeout {
    const waited = Math.max(0, cutAt - monotonic());
    return outsideContexts(() =>
      setLongTimeout(() => {
        // Only a command Redis cannot be answering (the connection is down, node-redis queues it) is
        // given up early: a slow reply on a live connection keeps the response timeout, so that a
        // grant it carries (a fencing token) is not thrown away.
        if (this.connection.offline()) call.giveUp(new ResponseTimeoutError(Math.round(waited), true));
      }, waited),
    );
  }

  /**
   * @internal The rest of a call whose first attempt failed with `first`: retries it when the policy says
   * so, else maps the error (reporting late results of attempts given up on to `request.onLateResults`).
   */
  async retry<T>(operation: string, request: Request<T, unknown>, first: unknown, dangling: Array<Promise<T>> | undefined, deadline: number | undefined): Promise<T> {
    const late = request.onLateResults ? (dangling ?? []) : undefined;
    try {
      if (!this.retryable(first, request)) throw first;
      const signal = request.signal ? AbortSignal.any([request.signal, this.closing.signal]) : this.closing.signal;
      return await pRetry(
        (attempt) => {
          if (attempt === 1) throw ownRealm(first);
          if (this.closed) throw new ClientClosedError();
          this.onRequest?.(operation);
          return this.bounded(request.send(attempt), this.responseTimeout, signal, late, deadline).catch((error: unknown) => {
            throw ownRealm(error);
          });
        },
        {
          ...this.policy,
          signal,
          maxRetryTime: request.deadline === undefined ? Infinity : Math.max(0, request.deadline - monotonic()),
          shouldRetry: ({ error, attemptNumber }) => attemptNumber === 1 || this.retryable(error, request),
          onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
            if (retriesLeft > 0) this.log.debug({ operation, attempt: attemptNumber, err: error }, 'Redis call failed; retrying');
          },
        },
      );
    } catch (error) {
      if (late && late.length > 0) {
        const undone = Promise.allSettled(late).then((results) => {
          const values = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
          return values.length > 0 ? request.onLateResults!(values) : undefined;
        });
        // Aborted by its caller: a late grant is undone before the rejection is delivered (issue 27), so that
        // the caller never sees a hold of the call it was told failed; bounded by the response timeout.
        if (request.signal?.aborted) await this.within(undone, this.responseTimeout);
        else undone.catch(() => {});
      }
      throw await this.translate(operation, error, request);
    }
  }

  /** Waits for `promise` (its outcome ignored), at most `ms`. */
  private async within(promise: Promise<unknown>, ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = outsideContexts(() => setTimeout(resolve, ms))));
    await Promise.race([promise.catch(() => {}), timeout]);
    clearTimeout(timer);
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
      const call = new InFlight<T>(monotonic() + timeoutMs, promise, resolve, reject, dangling, signal);
      this.watch(call);
      if (signal) signal.addEventListener('abort', call, { once: true });
      if (cutAt !== undefined && cutAt < call.at) call.cutTimer = this.cutTimer(call, cutAt);
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
        // The user's client was closed by its owner (the lock client itself is open): named in the message.
        return new ClientClosedError({ cause: error, client: this.closed ? undefined : this.connection.family });
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
