/** A `MeterProvider` of `@opentelemetry/api` (typed loosely so that relock's types do not need the package). */
export interface MeterProviderLike {
  /** The meter of an instrumentation scope (relock asks for `relock`). */
  getMeter(name: string, version?: string, options?: object): unknown;
}

/** A `TracerProvider` of `@opentelemetry/api` (typed loosely, as `MeterProviderLike`). */
export interface TracerProviderLike {
  /** The tracer of an instrumentation scope (relock asks for `relock`). */
  getTracer(name: string, version?: string, options?: object): unknown;
}

/**
 * The `otel` option of `createLockClient`: where relock's OpenTelemetry metrics and spans go. relock
 * records them only when the optional peer dependency `@opentelemetry/api` is installed; unless given as
 * `api`, it is loaded with a dynamic `import()` when the client is created. Metrics count from the
 * client's first operation either way: what happens while the import is under way is measured and
 * buffered (at most 10,000 measurements), then recorded once it has loaded (dropped if the package is
 * missing). Spans start once the API is there: give `api` to have spans of the very first operations too.
 */
export interface OtelOptions {
  /**
   * The `@opentelemetry/api` module (`import * as api from '@opentelemetry/api'`): given, relock records
   * metrics and spans from the client's first operation and loads nothing itself. Default: loaded in the
   * background (metrics of the operations made meanwhile are buffered, see above; spans start once loaded).
   */
  api?: object;
  /** The meter provider of relock's metrics. Default: the global one (`metrics.getMeterProvider()`). */
  meterProvider?: MeterProviderLike;
  /** The tracer provider of relock's spans. Default: the global one (`trace.getTracerProvider()`). */
  tracerProvider?: TracerProviderLike;
  /**
   * Whether spans carry the object's name (`relock.name`). Default true. Names are never metric
   * attributes (their number is unbounded); turn this off when names hold data that must not leave the
   * process.
   */
  recordNames?: boolean;
}

/** Loads `@opentelemetry/api`: resolves to the module, or rejects when it is not installed. */
export type ApiLoader = () => Promise<unknown>;
