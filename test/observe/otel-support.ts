import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type DataPoint, type Histogram, type MetricData } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { LockClient } from '../../src/index.js';
import type { Core } from '../../src/core.js';

/**
 * An OpenTelemetry SDK for tests: a meter provider whose metrics are read through the SDK's
 * `InMemoryMetricExporter` (cumulative), a tracer provider exporting to an `InMemorySpanExporter`, and the
 * async-hooks context manager so that `startActiveSpan` parents relock's spans.
 */
export class TestSdk {
  readonly metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  readonly reader = new PeriodicExportingMetricReader({ exporter: this.metricExporter, exportIntervalMillis: 3_600_000 });
  readonly meterProvider = new MeterProvider({ readers: [this.reader] });
  readonly spanExporter = new InMemorySpanExporter();
  readonly tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.spanExporter)] });
  private readonly contextManager = new AsyncLocalStorageContextManager().enable();

  constructor() {
    context.setGlobalContextManager(this.contextManager);
  }

  /** The metrics as exported now, by name. */
  async metrics(): Promise<Map<string, MetricData>> {
    this.metricExporter.reset();
    await this.reader.forceFlush();
    const all = this.metricExporter.getMetrics().flatMap((r) => r.scopeMetrics.filter((s) => s.scope.name === 'relock').flatMap((s) => s.metrics));
    return new Map(all.map((m) => [m.descriptor.name, m]));
  }

  /** The span `name` of the test's own tracer, as the caller's active span around `fn`. */
  inSpan<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.tracerProvider.getTracer('test').startActiveSpan(name, async (span) => {
      try {
        return await fn();
      } finally {
        span.end();
      }
    });
  }

  async close(): Promise<void> {
    await this.meterProvider.shutdown();
    await this.tracerProvider.shutdown();
    this.contextManager.disable();
    context.disable();
    trace.disable();
  }
}

/** The value of the data point of `metric` whose attributes are exactly `attributes` (undefined when none). */
export function point<T = number>(metric: MetricData | undefined, attributes: Record<string, string>): T | undefined {
  const found = (metric?.dataPoints as DataPoint<unknown>[] | undefined)?.find((p) => JSON.stringify(sorted(p.attributes)) === JSON.stringify(sorted(attributes)));
  return found?.value as T | undefined;
}

/** The histogram point of `metric` with `attributes`. */
export const histogram = (metric: MetricData | undefined, attributes: Record<string, string>): Histogram | undefined => point<Histogram>(metric, attributes);

const sorted = (attributes: object): [string, unknown][] => Object.entries(attributes).sort(([a], [b]) => a.localeCompare(b));

/** Resolves once `client` has loaded `@opentelemetry/api` (or found it missing). */
export function observerReady(client: LockClient): Promise<void> {
  return (client as unknown as { core: Core }).core.observe.ready;
}
