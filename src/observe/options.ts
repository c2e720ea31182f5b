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
 * `api`, it is loaded with a dynamic `import()` when the client is created, and metrics and spans start
 * once it has loaded (operations that start before, in the first moments of the client, are not recorded).
 */
export interface OtelOptions {
  /**
   * The `@opentelemetry/api` module (`import * as api from '@opentelemetry/api'`): given, relock records
   * from the client's first operation and loads nothing itself. Default: loaded in the background.
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
