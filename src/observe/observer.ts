import type { Logger } from 'pino';
import { IllegalMonitorStateError } from '../errors.js';
import type { Attempt } from '../pubsub/attempt.js';
import type { Executor } from '../redis/executor.js';
import { monotonic } from '../time.js';
import type { LockLostEvent, Watchdog } from '../watchdog/watchdog.js';
import { acquireChannel, lostChannel, releaseChannel, type AcquireMessage, type LostMessage, type ReleaseMessage } from './channels.js';
import type { AcquireOutcome, MetricKind, WokenBy } from './kinds.js';
import type { ApiLoader, OtelOptions } from './options.js';
import { loadApi, Otel } from './otel.js';

/** What one acquisition call tells its probe while it runs. */
export interface AcquireProbe {
  /** An attempt is about to be sent; `wake` is what woke the waiter before it (undefined: the first attempt, or a poll). */
  attempt(wake: 'message' | 'timer' | undefined): void;
  /** An attempt found the object busy and the call goes on waiting (`waitMs` > 0). */
  busy(): void;
}

/** Who holds what an acquisition takes: an owner id, permit ids, or nobody (a semaphore's permits, a latch, a group). */
export type Holders = string | readonly string[] | undefined;

const NOBODY: readonly string[] = [];
const list = (holders: Holders): readonly string[] => (holders === undefined ? NOBODY : typeof holders === 'string' ? [holders] : holders);

/** The probe of calls made while nothing observes (see `Observer.acquiresQuietly`): it does nothing. */
export const QUIET_PROBE: AcquireProbe = Object.freeze({ attempt: () => {}, busy: () => {} });
const IDLE = QUIET_PROBE;

/**
 * `attempt` telling `probe` of each attempt (see `AcquireProbe`); `attempt` itself while nothing observes.
 * For the attempt functions given to `waitFor`.
 */
export function probed<T>(probe: AcquireProbe, attempt: (deadline: number | undefined) => Promise<Attempt<T>>): (deadline: number | undefined, wake?: 'message' | 'timer') => Promise<Attempt<T>> {
  if (probe === IDLE) return attempt;
  return async (deadline, wake) => {
    probe.attempt(wake);
    const result = await attempt(deadline);
    if (!result.acquired) probe.busy();
    return result;
  };
}

/** A hold this process has, as the observer counts it (per lock key and owner). */
interface Hold {
  readonly kind: MetricKind;
  count: number;
  /** Monotonic ms of its first grant. */
  readonly since: number;
}

/** The attributes of one kind, shared by every measurement of that kind. */
const kindAttributes = new Map<MetricKind, { 'relock.kind': MetricKind }>();
const attributesOf = (kind: MetricKind): { 'relock.kind': MetricKind } => {
  let attributes = kindAttributes.get(kind);
  if (!attributes) kindAttributes.set(kind, (attributes = Object.freeze({ 'relock.kind': kind })));
  return attributes;
};

const RENEW_REQUEST = Object.freeze({ 'relock.request': 'watchdog.renew' });
const OK = Object.freeze({ 'relock.outcome': 'ok' });
const ERROR = Object.freeze({ 'relock.outcome': 'error' });
const RENEWED = Object.freeze({ 'relock.outcome': 'renewed' });
const EXPIRED = Object.freeze({ 'relock.outcome': 'expired' });

/** The most measurements buffered while `@opentelemetry/api` loads (see `Observer.meter`): a bound on memory if it never settles. */
const MAX_BUFFERED = 10_000;

/** Span status code ERROR of `@opentelemetry/api` (`SpanStatusCode.ERROR`). */
const ERROR_STATUS = 2;

/**
 * The one place relock's instrumentation lives: every acquisition, release and lost hold of every
 * primitive goes through `acquire`, `release` and `lost`, which record OpenTelemetry metrics and spans
 * (when `@opentelemetry/api` is installed and the client's `otel` option is not false) and publish on
 * the `relock:*` diagnostics channels (when someone subscribed). While neither is the case each call
 * costs three checks and runs the operation unchanged; so it does when the API is loaded but nothing
 * would record (the no-op meter, and a span of the no-op tracer: no SDK registered), after starting that
 * span. Holds are counted (for `relock.held`, the hold duration and the kind of a lost hold) while
 * OpenTelemetry records (a meter that is not the no-op one, or a recording span) or anyone subscribed to
 * a channel.
 */
export class Observer {
  private otel: Otel | undefined;
  /** Settles once `@opentelemetry/api` was loaded, or found missing, or not asked for. */
  readonly ready: Promise<void>;
  /**
   * True while `@opentelemetry/api` is being loaded: operations are then measured as if a meter recorded,
   * and their measurements wait in `buffered` (see `meter`), so that the first operations of a client
   * are counted too.
   */
  private pending = false;
  /** Measurements made while `pending`, applied in order once the API has loaded (dropped when it is missing); at most `MAX_BUFFERED`. */
  private buffered: ((otel: Otel) => void)[] = [];
  /** Holds counted in `relock.held`, by `key + ' ' + owner`. */
  private readonly holds = new Map<string, Hold>();

  /**
   * `options`: the client's `otel` option (false: never load the API). `load` loads the API (a test can
   * give one that fails, as when the package is not installed).
   */
  constructor(options: false | OtelOptions | undefined, log: Logger, load: ApiLoader = loadApi) {
    if (options === false || options?.api) {
      if (options) this.otel = new Otel(options.api as ConstructorParameters<typeof Otel>[0], options);
      this.ready = Promise.resolve();
      return;
    }
    this.pending = true;
    this.ready = load().then(
      (api) => {
        const otel = new Otel(api as ConstructorParameters<typeof Otel>[0], options ?? {});
        this.otel = otel;
        this.settleBuffer(otel);
      },
      (error: unknown) => {
        log.debug({ err: error }, '@opentelemetry/api not loaded: no metrics or spans');
        this.settleBuffer(undefined);
      },
    );
  }

  /** The API has loaded (`otel`) or was found missing: applies the buffered measurements to it, or drops them. */
  private settleBuffer(otel: Otel | undefined): void {
    const buffered = this.buffered;
    this.buffered = [];
    this.pending = false;
    if (otel) for (const record of buffered) record(otel);
  }

  /**
   * Records `record` on the instruments: at once when the API has loaded, into the buffer while it is
   * loading (at most `MAX_BUFFERED` measurements: later ones are dropped), not at all without it.
   */
  private meter(record: (otel: Otel) => void): void {
    if (this.otel) record(this.otel);
    else if (this.pending && this.buffered.length < MAX_BUFFERED) this.buffered.push(record);
  }

  /**
   * Once the API has loaded with a meter that records, counts `executor`'s requests (`relock.redis.requests`)
   * and `watchdog`'s renewals (`relock.watchdog.renewals`, `relock.watchdog.calls`) through their hooks;
   * while it loads they count into the buffer; otherwise (no API, or its no-op meter, which the API never
   * switches) the hooks stay unset and cost nothing.
   */
  count(executor: Executor, watchdog: Watchdog): void {
    const byOperation = new Map<string, { 'relock.request': string }>();
    const install = (record: (measure: (otel: Otel) => void) => void): void => {
      executor.onRequest = (operation) => {
        let attributes = byOperation.get(operation);
        if (!attributes) byOperation.set(operation, (attributes = { 'relock.request': operation }));
        const requestAttributes = attributes;
        record((otel) => otel.requests.add(1, requestAttributes));
      };
      watchdog.onRenewal = (answered, renewed, gone) =>
        record((otel) => {
          otel.requests.add(1, RENEW_REQUEST);
          otel.renewalCalls.add(1, answered ? OK : ERROR);
          if (renewed > 0) otel.renewals.add(renewed, RENEWED);
          if (gone > 0) otel.renewals.add(gone, EXPIRED);
        });
    };
    if (this.pending) install((measure) => this.meter(measure));
    void this.ready.then(() => {
      const otel = this.otel;
      if (otel?.metrics) install((measure) => measure(otel));
      else [executor.onRequest, watchdog.onRenewal] = [undefined, undefined];
    });
  }

  /**
   * Whether an acquisition call would run unmeasured (`acquire` calls its operation with the idle probe):
   * no OpenTelemetry meter that records, no tracer SDK, nobody subscribed to a `relock:*` channel. Hot
   * paths check it first and then skip `acquire`'s closure.
   */
  get acquiresQuietly(): boolean {
    if (this.pending) return false;
    const otel = this.otel;
    if (otel?.metrics === true || (acquireChannel as { hasSubscribers?: boolean }).hasSubscribers === true || lostChannel.hasSubscribers) return false;
    return otel === undefined || otel.tracesNothing();
  }

  /** As `acquiresQuietly`, for `release` (which also has counted holds to drop). */
  get releasesQuietly(): boolean {
    if (this.pending) return false;
    const otel = this.otel;
    if (otel?.metrics === true || (releaseChannel as { hasSubscribers?: boolean }).hasSubscribers === true || lostChannel.hasSubscribers) return false;
    return otel === undefined || (this.holds.size === 0 && otel.tracesNothing());
  }

  /** Whether OpenTelemetry records (the API was loaded). */
  get recording(): boolean {
    return this.otel !== undefined;
  }

  /**
   * Runs one acquisition call `run` of the object `name` of `kind` (resolving to the grant, or undefined
   * when the wait time ran out), measuring it: `relock.acquire.duration`, `relock.acquires`,
   * `relock.waiters` while it waits, a `relock.acquire` span (the active span while `run` runs), and the
   * `relock:acquire` TracingChannel events. When granted, each of `holders` (the owner, or the permit ids,
   * of the hold on `key`; none for objects without owned holds) counts as a hold in `relock.held`. The
   * outcome is `aborted` when it rejected after `signal` aborted, `error` when it rejected otherwise.
   */
  acquire<T>(kind: MetricKind, name: string, key: string, holders: Holders, waitMs: number, signal: AbortSignal | undefined, run: (probe: AcquireProbe) => Promise<T | undefined>): Promise<T | undefined> {
    if (this.acquiresQuietly) return run(IDLE);
    const otel = this.otel;
    const traced = (acquireChannel as { hasSubscribers?: boolean }).hasSubscribers === true;
    const counted = this.pending || otel?.metrics === true || traced || lostChannel.hasSubscribers;
    const parent = otel?.api.context.active();
    const span = otel?.tracer.startSpan('relock.acquire', { attributes: this.spanAttributes(otel, kind, name) }, parent);
    // Metrics to the no-op meter, a span of the no-op tracer, nobody subscribed: nothing to measure.
    if (!counted && otel!.passThrough(span!, parent!)) return run(IDLE);
    const start = monotonic();
    const attributes = attributesOf(kind);
    const message: AcquireMessage = { kind, name, waitMs };
    let attempts = 0;
    let wokenBy: WokenBy = 'none';
    let waiting = false;
    const probe: AcquireProbe = {
      attempt: (wake) => {
        attempts++;
        wokenBy = wake ?? (attempts > 1 ? 'timer' : 'none');
      },
      busy: () => {
        if (waiting || waitMs <= 0) return;
        waiting = true;
        this.meter((o) => o.waiters.add(1, attributes));
      },
    };
    const settle = (outcome: AcquireOutcome, error?: unknown): void => {
      message.outcome = outcome;
      message.attempts = attempts;
      message.wokenBy = wokenBy;
      if (outcome === 'acquired') for (const holder of list(holders)) this.held(kind, key, holder);
      const outcomeAttributes = { 'relock.kind': kind, 'relock.outcome': outcome };
      const seconds = (monotonic() - start) / 1000;
      const waited = waiting;
      this.meter((o) => {
        o.acquireDuration.record(seconds, outcomeAttributes);
        o.acquires.add(1, outcomeAttributes);
        if (waited) o.waiters.add(-1, attributes);
      });
      // Spans start only once the API has loaded (a call started while it was loading has none).
      if (!otel) return;
      span!.setAttributes({ 'relock.outcome': outcome, 'relock.wait_time_ms': Number.isFinite(waitMs) ? waitMs : -1, 'relock.attempts': attempts, 'relock.woken_by': wokenBy });
      if (outcome !== 'acquired') span!.setStatus({ code: ERROR_STATUS, message: outcome === 'error' ? String((error as Error | undefined)?.message ?? error) : outcome });
      if (error !== undefined) span!.recordException(error as Error);
      span!.end();
    };
    const running = (): Promise<T | undefined> => (span ? otel!.api.context.with(otel!.api.trace.setSpan(otel!.api.context.active(), span), run, undefined, probe) : run(probe));
    const observed = (): Promise<T | undefined> =>
      running().then(
        (value) => {
          settle(value === undefined ? 'timeout' : 'acquired');
          return value;
        },
        (error: unknown) => {
          settle(signal?.aborted && error === signal.reason ? 'aborted' : 'error', error);
          throw error;
        },
      );
    return traced ? acquireChannel.tracePromise(observed, message) : observed();
  }

  /**
   * Runs one release call `run` of the holds of `holders` on `key`, measuring it: `relock.held` drops by
   * one per holder, `relock.hold.duration` is recorded for each holder with no hold left, a
   * `relock.release` span (error status when it rejects, or when `released` says of its value that
   * nothing was released), and the `relock:release` TracingChannel events. A rejection with
   * `IllegalMonitorStateError` means the owner held nothing: its counted holds are dropped.
   */
  release<T>(kind: MetricKind, name: string, key: string, holders: Holders, run: () => Promise<T>, released: (value: T) => boolean = () => true): Promise<T> {
    if (this.releasesQuietly) return run();
    const otel = this.otel;
    const traced = (releaseChannel as { hasSubscribers?: boolean }).hasSubscribers === true;
    const counted = this.pending || otel?.metrics === true || traced || lostChannel.hasSubscribers;
    const parent = otel?.api.context.active();
    const span = otel?.tracer.startSpan('relock.release', { attributes: this.spanAttributes(otel, kind, name) }, parent);
    // As in `acquire`, unless holds counted earlier (a subscriber then) are still to be dropped.
    if (!counted && this.holds.size === 0 && otel!.passThrough(span!, parent!)) return run();
    const message: ReleaseMessage = { kind, name };
    const observed = (): Promise<T> =>
      run().then(
        (value) => {
          if (released(value)) for (const holder of list(holders)) this.unheld(kind, `${key} ${holder}`, message);
          else span?.setStatus({ code: ERROR_STATUS, message: 'not held' });
          span?.end();
          return value;
        },
        (error: unknown) => {
          if (error instanceof IllegalMonitorStateError) for (const holder of list(holders)) this.drop(`${key} ${holder}`);
          span?.setStatus({ code: ERROR_STATUS, message: String((error as Error | undefined)?.message ?? error) });
          span?.recordException(error as Error);
          span?.end();
          throw error;
        },
      );
    return traced ? releaseChannel.tracePromise(observed, message) : observed();
  }

  /** A hold was lost (the `lockLost` event): `relock.lost` by reason, its counted holds dropped, a `relock:lost` message. */
  lost(event: LockLostEvent): void {
    const id = `${event.key} ${event.owner}`;
    const kind = this.holds.get(id)?.kind;
    this.drop(id);
    const attributes = kind ? { 'relock.kind': kind, 'relock.reason': event.reason } : { 'relock.reason': event.reason };
    this.meter((otel) => otel.lost.add(1, attributes));
    if (lostChannel.hasSubscribers) lostChannel.publish({ kind, name: event.name, key: event.key, owner: event.owner, reason: event.reason } satisfies LostMessage);
  }

  /**
   * A leadership of this process began (`elected`) or ended (`resigned`, `lost`) in the election `name`:
   * `relock.leader.changes` by change, and the gauge `relock.leader.is_leader` (an up-down counter, 1 while
   * leading). Both carry the election's name (`relock.election`) unless `recordNames` is off: an
   * application has a few elections, fixed in its code, unlike lock names.
   */
  leadership(name: string, change: 'elected' | 'resigned' | 'lost'): void {
    const otel = this.otel;
    if (!otel) return;
    const election = otel.recordNames ? { 'relock.election': name } : {};
    otel.leaderChanges.add(1, { ...election, 'relock.change': change });
    otel.isLeader.add(change === 'elected' ? 1 : -1, election);
  }

  /** Counts one more hold of `owner` on `key`. */
  private held(kind: MetricKind, key: string, owner: string): void {
    const id = `${key} ${owner}`;
    const hold = this.holds.get(id);
    if (hold) hold.count++;
    else this.holds.set(id, { kind, count: 1, since: monotonic() });
    this.meter((otel) => otel.held.add(1, attributesOf(kind)));
  }

  /** Counts one hold of `id` fewer; the last one's hold duration is recorded (and set on `message`). */
  private unheld(kind: MetricKind, id: string, message: ReleaseMessage): void {
    const hold = this.holds.get(id);
    if (!hold) return;
    this.meter((otel) => otel.held.add(-1, attributesOf(kind)));
    if (--hold.count > 0) return;
    this.holds.delete(id);
    const heldMs = monotonic() - hold.since;
    message.heldMs = heldMs;
    this.meter((otel) => otel.holdDuration.record(heldMs / 1000, attributesOf(kind)));
  }

  /** Forgets every counted hold of `id` (it is gone from Redis). */
  private drop(id: string): void {
    const hold = this.holds.get(id);
    if (!hold) return;
    this.holds.delete(id);
    this.meter((otel) => otel.held.add(-hold.count, attributesOf(hold.kind)));
  }

  /** The attributes a span starts with: the kind, and the name unless `recordNames` is off. */
  private spanAttributes(otel: Otel, kind: MetricKind, name: string): Record<string, string> {
    return otel.recordNames ? { 'relock.kind': kind, 'relock.name': name } : { 'relock.kind': kind };
  }
}
