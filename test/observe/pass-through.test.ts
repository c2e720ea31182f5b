/**
 * A span that changes nothing is not made active: when relock's tracer hands out spans that do not record
 * and carry the invalid span context (a tracer provider of the API's no-op tracers, given as
 * `otel.tracerProvider`) or their parent's, and nothing else is measured (no meter provider, nobody on the
 * TracingChannels), an acquisition runs without the span: it does not enter a context for it (counted
 * through the global context manager's `with`). A span of a recording tracer is entered (the contrast).
 * Likewise the requests and renewals are counted only into a meter that records: with the no-op meter the
 * executor's and the watchdog's hooks stay unset.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { context, INVALID_SPAN_CONTEXT, ProxyTracerProvider, trace, TraceFlags, type Context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { TracerProvider } from '@opentelemetry/api';
import { useRedis } from '../support/harness.js';
import type { Core } from '../../src/core.js';
import { observerReady } from './otel-support.js';
import { lockClient, uniqueName } from '../support/helpers.js';

const env = useRedis();

/** The async-hooks context manager, counting the contexts entered with `with`. */
class CountingContextManager extends AsyncLocalStorageContextManager {
  entered = 0;
  override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    this.entered++;
    return super.with(ctx, fn, thisArg, ...args);
  }
}

const manager = new CountingContextManager();
beforeAll(() => {
  context.setGlobalContextManager(manager.enable());
});
afterAll(() => {
  manager.disable();
  context.disable();
});

/** Contexts entered during one lock() and unlock() on a client whose tracer comes from `tracerProvider`. */
async function contextsEntered(tracerProvider: TracerProvider, parent?: Context): Promise<number> {
  const client = lockClient(env.redis, { otel: { tracerProvider } });
  await observerReady(client);
  const lock = client.getLock(uniqueName('pass-through'));
  const cycle = async (): Promise<number> => {
    const before = manager.entered;
    expect(await lock.tryLock(0, 5, 'seconds')).toBe(true);
    await lock.unlock();
    return manager.entered - before;
  };
  return parent === undefined ? cycle() : context.with(parent, cycle);
}

describe('a span that changes nothing', () => {
  it('of a no-op tracer, with no parent span (the invalid span context): not entered', async () => {
    expect(await contextsEntered(new ProxyTracerProvider())).toBe(0);
  });

  it("of a no-op tracer, under a parent span (the parent's span context): not entered", async () => {
    const parent = trace.setSpanContext(context.active(), { ...INVALID_SPAN_CONTEXT, traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED });
    expect(await contextsEntered(new ProxyTracerProvider(), parent)).toBe(0);
  });

  it('of a recording tracer: entered (the contrast: the count sees relock entering its span)', async () => {
    const provider = new BasicTracerProvider();
    expect(await contextsEntered(provider)).toBeGreaterThan(0);
    await provider.shutdown();
  });
});

describe('counting hooks', () => {
  /** The executor's and the watchdog's counting hooks of a client made with `otel`, once the API has loaded. */
  async function hooks(otel: { meterProvider?: unknown }): Promise<unknown[]> {
    const client = lockClient(env.redis, { otel: otel as never });
    await observerReady(client);
    const { executor, watchdog } = (client as unknown as { core: Core }).core;
    return [executor.onRequest, watchdog.onRenewal];
  }

  it('with the no-op meter (no meter provider): unset, so that a request costs no measurement', async () => {
    expect(await hooks({})).toEqual([undefined, undefined]);
  });

  it('with a meter that records: set (the contrast)', async () => {
    const meterProvider = new MeterProvider();
    expect(await hooks({ meterProvider })).toEqual([expect.any(Function), expect.any(Function)]);
    await meterProvider.shutdown();
  });
});
