import { detachedContext, outsideContexts, type LockContext } from '../context.js';
import { IllegalMonitorStateError, InvalidArgumentError, LockLostError } from '../errors.js';
import { RLock } from '../lock/lock.js';
import { acquireForCaller } from '../lock/protocol/caller.js';
import { unlock } from '../lock/protocol/unlock.js';
import { refuseUnknown } from '../option-keys.js';
import { monotonic, setLongTimeout } from '../time.js';
import { HoldSignal } from '../watchdog/hold.js';
import { JOB_SHORTEN } from './scripts.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** The lock of `LockClient.runExclusive` (scheduled jobs). */
    'job-lock': true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** The lock of `LockClient.runExclusive`. */
    job_lock: true;
  }
}

/** Options of `LockClient.runExclusive()` (ShedLock's `@SchedulerLock`). Every time is in milliseconds. */
export interface RunExclusiveOptions {
  /**
   * Required. How long the lock is kept at most (ShedLock's `lockAtMostFor`): the lease when the process
   * dies while running, so that the next run can happen; a positive integer of ms. Without `watchdog`
   * it is the lock's lease from the start, so make it longer than the job can take (the job's `signal`
   * aborts a drift margin before it ends). With `watchdog: true` it is the cap: the watchdog keeps the
   * lock while the job runs, and at most this long (then the job's signal aborts and the lock is let go).
   */
  atMostMs: number;
  /**
   * How long the lock is kept at least, from the start (ShedLock's `lockAtLeastFor`), default 0: when the
   * job finishes earlier, the lock is not released but left to expire `atLeastMs` after the start, so that
   * instances whose clocks or schedulers fire slightly apart do not run the same tick twice. An integer
   * from 0 to `atMostMs`.
   */
  atLeastMs?: number;
  /**
   * Whether the watchdog renews the lock while the job runs (default false): for jobs whose length you
   * cannot bound in advance; `atMostMs` then caps the hold. A crashed process's lock then ends within
   * `lockWatchdogTimeout`.
   */
  watchdog?: boolean;
  /** Aborts the job: the job's own signal aborts too. Already aborted: nothing is tried (rejects with its reason). */
  signal?: AbortSignal;
}

/** What `runExclusive` did: ran the job (with its result), or not (another instance held the lock). */
export type ExclusiveRun<T> =
  | {
      /** The job ran (this instance held the lock for it). */
      readonly ran: true;
      /** What the job returned (awaited). */
      readonly value: T;
    }
  | {
      /** The job did not run: another instance held the lock. */
      readonly ran: false;
    };

/**
 * The lock of a scheduled job (`LockClient.runExclusive`): an `RLock` hash of kind `job-lock`, taken
 * with one attempt (never waits), whose early finish leaves it to expire at `atLeastMs` after the start.
 * @internal Made by `LockClient.runExclusive`.
 */
export class RJobLock extends RLock {
  protected override readonly kind = 'job-lock';
  /** @internal */
  override readonly metricKind = 'job_lock';

  /** See `LockClient.runExclusive`. */
  async runExclusive<T>(fn: (signal: AbortSignal) => T | Promise<T>, options: RunExclusiveOptions): Promise<ExclusiveRun<T>> {
    if (typeof fn !== 'function') throw new InvalidArgumentError('fn', 'must be a function');
    const { atMostMs, atLeastMs, watchdog, signal } = checkRunOptions(options);
    signal?.throwIfAborted();
    const taken = await acquireForCaller(this, 0, watchdog ? undefined : atMostMs, signal, detachedContext());
    if (!taken) return { ran: false };
    const { ctx, grant } = taken;
    const start = grant.sentAt;
    const owner = this.ownerOf(ctx);
    const hold = new HoldSignal(this.core.watchdog, this.name, this.key, [owner]);
    if (watchdog) hold.followRenewals();
    else hold.followLease(start, atMostMs);
    const job = new AbortController();
    const stop = (): void => job.abort(hold.signal.aborted ? hold.signal.reason : signal?.reason);
    hold.signal.addEventListener('abort', stop, { once: true });
    signal?.addEventListener('abort', stop, { once: true });
    let left: Promise<void> | undefined;
    const leave = (): Promise<void> => (left ??= this.leave(ctx, owner, hold, start, atLeastMs, watchdog));
    // With the watchdog, atMostMs caps the hold: the job's signal aborts and the lock is let go then.
    const cap = watchdog
      ? outsideContexts(() =>
          setLongTimeout(() => {
            job.abort(new LockLostError(this.name, 'lease-ended'));
            leave().catch((error: unknown) => this.core.log.warn({ lock: this.name, err: error }, 'job lock: letting go at atMostMs failed'));
          }, atMostMs - (monotonic() - start)),
        )
      : undefined;
    try {
      const value = await fn(job.signal);
      return { ran: true, value };
    } finally {
      clearTimeout(cap);
      hold.signal.removeEventListener('abort', stop);
      signal?.removeEventListener('abort', stop);
      await leave();
    }
  }

  /**
   * Ends the run's hold: stops its signal and renewals; before `atLeastMs` after the start, shortens the
   * lock's TTL to the rest of it (`jobLock.shorten`: owner-checked, never lengthened), else releases it.
   * A hold already gone (its lease ran out while the job ran) is only logged.
   */
  private async leave(ctx: LockContext, owner: string, hold: HoldSignal, start: number, atLeastMs: number, renewed: boolean): Promise<void> {
    hold.stop(true);
    const rest = Math.ceil(start + atLeastMs - monotonic());
    try {
      if (rest <= 0) {
        await unlock(this, ctx, renewed, hold.abortable);
        return;
      }
      if (renewed) this.core.watchdog.release(this.key, owner);
      const { core } = this;
      const held = await core.observe.release(
        this.metricKind,
        this.name,
        this.key,
        owner,
        () => core.executor.run('jobLock.shorten', () => JOB_SHORTEN.run(core.connection, { lock: this.key, owner, ms: String(rest) }), { idempotent: true, expects: this.expects }),
        (ok) => ok,
      );
      if (!held) throw new IllegalMonitorStateError(this.name, owner);
    } catch (error) {
      if (!(error instanceof IllegalMonitorStateError)) throw error;
      this.core.log.warn({ lock: this.name, owner }, 'job lock: the lock had already expired when the job ended (atMostMs shorter than the job)');
    }
  }
}

/** Checks `runExclusive`'s options (see `RunExclusiveOptions`) and fills in the defaults. */
function checkRunOptions(options: RunExclusiveOptions): Required<Omit<RunExclusiveOptions, 'signal'>> & { signal?: AbortSignal } {
  refuseUnknown(options, ['atMostMs', 'atLeastMs', 'watchdog', 'signal'], 'options');
  const { atMostMs, atLeastMs = 0, watchdog = false, signal } = options;
  if (typeof atMostMs !== 'number' || !Number.isSafeInteger(atMostMs) || atMostMs < 1) {
    throw new InvalidArgumentError('options.atMostMs', `is required: a positive whole number of milliseconds; got ${String(atMostMs)}`);
  }
  if (typeof atLeastMs !== 'number' || !Number.isSafeInteger(atLeastMs) || atLeastMs < 0 || atLeastMs > atMostMs) {
    throw new InvalidArgumentError('options.atLeastMs', `must be a whole number of milliseconds from 0 to atMostMs (${atMostMs}); got ${String(atLeastMs)}`);
  }
  if (typeof watchdog !== 'boolean') throw new InvalidArgumentError('options.watchdog', 'must be a boolean');
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new InvalidArgumentError('options.signal', 'must be an AbortSignal');
  return { atMostMs, atLeastMs, watchdog, signal };
}
