import type * as Api from '@opentelemetry/api';
import type { ApiLoader, OtelOptions } from './options.js';

/** The instrumentation scope name of relock's meter and tracer. */
export const SCOPE = 'relock';

/** Bucket boundaries (s) of the duration histograms: 1 ms to 1 min, where lock waits and holds fall. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * relock's OpenTelemetry instruments and tracer, made from the loaded API. Only this file names the API's
 * types; the types reachable from the package root do not, so that they compile without the package.
 */
export class Otel {
  readonly acquireDuration: Api.Histogram;
  readonly holdDuration: Api.Histogram;
  readonly acquires: Api.Counter;
  readonly lost: Api.Counter;
  readonly waiters: Api.UpDownCounter;
  readonly held: Api.UpDownCounter;
  readonly renewals: Api.Counter;
  readonly renewalCalls: Api.Counter;
  readonly requests: Api.Counter;
  readonly leaderChanges: Api.Counter;
  readonly isLeader: Api.UpDownCounter;
  readonly tracer: Api.Tracer;
  readonly recordNames: boolean;
  /**
   * Whether the meter records anything: false when it is the API's no-op meter (no meter provider was
   * registered or given when the client was made; the API does not switch a meter it handed out).
   */
  readonly metrics: boolean;
  /** The global tracer provider relock's tracer delegates to (undefined when a `tracerProvider` was given). */
  private readonly globalTracers: Api.ProxyTracerProvider | undefined;
  /** The API's no-op tracer provider: what `globalTracers` delegates to until an SDK registers one. */
  private readonly noopTracers: Api.TracerProvider | undefined;

  constructor(
    readonly api: typeof Api,
    options: OtelOptions,
  ) {
    const meter = ((options.meterProvider as Api.MeterProvider | undefined) ?? api.metrics.getMeterProvider()).getMeter(SCOPE);
    this.metrics = meter !== api.createNoopMeter();
    const tracers = (options.tracerProvider as Api.TracerProvider | undefined) ?? api.trace.getTracerProvider();
    this.tracer = tracers.getTracer(SCOPE);
    if (options.tracerProvider === undefined && tracers instanceof api.ProxyTracerProvider) {
      this.globalTracers = tracers;
      this.noopTracers = new api.ProxyTracerProvider().getDelegate();
    }
    this.recordNames = options.recordNames ?? true;
    const advice = { explicitBucketBoundaries: DURATION_BUCKETS };
    this.acquireDuration = meter.createHistogram('relock.acquire.duration', { unit: 's', description: 'Time from an acquisition call to its grant or give-up.', advice });
    this.holdDuration = meter.createHistogram('relock.hold.duration', { unit: 's', description: 'Time from a grant to the release that freed the object.', advice });
    this.acquires = meter.createCounter('relock.acquires', { unit: '{acquisition}', description: 'Acquisition calls ended, by outcome.' });
    this.lost = meter.createCounter('relock.lost', { unit: '{hold}', description: 'Holds lost (the lockLost event), by reason.' });
    this.waiters = meter.createUpDownCounter('relock.waiters', { unit: '{waiter}', description: 'Acquisition calls of this process waiting for a busy object.' });
    this.held = meter.createUpDownCounter('relock.held', { unit: '{hold}', description: 'Holds this process has acquired and not released or lost.' });
    this.renewals = meter.createCounter('relock.watchdog.renewals', { unit: '{hold}', description: 'Holds the watchdog renewed (outcome renewed) or found gone (outcome expired).' });
    this.renewalCalls = meter.createCounter('relock.watchdog.calls', { unit: '{call}', description: 'Renewal script calls of the watchdog, answered (outcome ok) or failed (outcome error).' });
    this.requests = meter.createCounter('relock.redis.requests', { unit: '{request}', description: 'Requests relock sent to Redis (retries included), by operation.' });
    this.leaderChanges = meter.createCounter('relock.leader.changes', { unit: '{change}', description: 'Leaderships of this process that began (change elected) or ended (change resigned or lost), by election.' });
    this.isLeader = meter.createUpDownCounter('relock.leader.is_leader', { unit: '{leader}', description: 'Whether this process leads the election now (0 or 1), by election.' });
  }

  /**
   * Whether `span`, just started in the context `parent`, changes nothing: it does not record and carries
   * its parent's span context (or the invalid one), as every span of the API's no-op tracer does (no tracer
   * provider registered yet). Making it the active span would then change no child span, so a call may
   * run without it. A span an SDK's sampler dropped has a span context of its own: not a pass-through.
   */
  /**
   * True while relock's tracer is the global one and no SDK registered a tracer provider yet: every span
   * it would start is a pass-through (see `passThrough`), so none need be started. Checked per call (an SDK
   * may register later): two property reads.
   */
  tracesNothing(): boolean {
    return this.globalTracers !== undefined && this.globalTracers.getDelegate() === this.noopTracers;
  }

  passThrough(span: Api.Span, parent: Api.Context): boolean {
    if (span.isRecording()) return false;
    const own = span.spanContext();
    return own === this.api.INVALID_SPAN_CONTEXT || own === this.api.trace.getSpanContext(parent);
  }
}

/** The default loader: a dynamic import, attempted once per process. */
let loaded: Promise<unknown> | undefined;
export const loadApi: ApiLoader = () => (loaded ??= import('@opentelemetry/api'));
