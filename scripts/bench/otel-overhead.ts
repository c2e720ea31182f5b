/**
 * `npm run bench:otel`: what observability costs on the uncontended cycle (acquire + release of a free
 * lock, one task, its own redis-server). Variants, run in interleaved rounds in one process:
 * - plain: `otel: false`, no diagnostics-channel subscriber (the instrumentation's idle path);
 * - dc: `otel: false`, a subscriber on every `relock:*` channel;
 * - api: `@opentelemetry/api` loaded, no SDK registered (its no-op meter and tracer);
 * - sdk: the OpenTelemetry SDK with in-memory exporters (every metric and span recorded).
 * The variants take turns in blocks of `--cycles` cycles (default 100), `--blocks` times (default 100),
 * in a rotating order, so that load from elsewhere falls on all of them alike; prints each variant's
 * median and p90 cycle time and its throughput relative to plain (plain's median / its median).
 * `--baseline DIR` adds the variant `base`: the relock sources in DIR (say `git archive <rev> src`
 * unpacked under .tmp/), to compare the idle path with a tree without the instrumentation.
 */
import { channel, tracingChannel } from 'node:diagnostics_channel';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createClient } from 'redis';
import { createLockClient, type LockClient } from '../../src/index.js';
import type { Core } from '../../src/core.js';
import { startRedis } from '../../test/support/redis.js';

const { values } = parseArgs({ options: { blocks: { type: 'string', default: '100' }, cycles: { type: 'string', default: '100' }, baseline: { type: 'string' } } });
const blocks = Number(values.blocks);
const cyclesPerBlock = Number(values.cycles);

const server = await startRedis();
const redis = createClient({ url: server.url });
await redis.connect();
const spans = new InMemorySpanExporter();
const metrics = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const sdk = {
  meterProvider: new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: metrics, exportIntervalMillis: 1000 })] }),
  tracerProvider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }),
};

const noop = (): void => {};
const subscribers = { start: noop, end: noop, asyncStart: noop, asyncEnd: noop, error: noop };
const subscribe = (on: boolean): void => {
  for (const name of ['relock:acquire', 'relock:release']) {
    if (on) tracingChannel(name).subscribe(subscribers);
    else tracingChannel(name).unsubscribe(subscribers);
  }
  if (on) channel('relock:lost').subscribe(noop);
  else channel('relock:lost').unsubscribe(noop);
};

interface Variant {
  readonly name: string;
  readonly client: LockClient;
  readonly dc: boolean;
}
const variant = async (name: string, otel: Parameters<typeof createLockClient>[0]['otel'], dc = false): Promise<Variant> => {
  const client = createLockClient({ redis, otel });
  await (client as unknown as { core: Core }).core.observe.ready;
  return { name, client, dc };
};
const variants = [await variant('plain', false), await variant('dc', false, true), await variant('api', {}), await variant('sdk', sdk)];
if (values.baseline !== undefined) {
  const base = (await import(resolve(values.baseline, 'index.ts'))) as { createLockClient: (options: { redis: unknown }) => LockClient };
  variants.unshift({ name: 'base', client: base.createLockClient({ redis }), dc: false });
}

/** Runs `cycles` acquire/release cycles of `v`, adding each cycle's duration (µs) to `into`. */
async function block(v: Variant, cycles: number, into: number[]): Promise<void> {
  subscribe(v.dc);
  const lock = v.client.getLock(`bench-otel:${v.name}`);
  for (let i = 0; i < cycles; i++) {
    const start = performance.now();
    await (await lock.acquire({ waitMs: 0 })).release();
    into.push((performance.now() - start) * 1000);
  }
  subscribe(false);
  spans.reset();
}

const quantile = (values: number[], q: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];
for (const v of variants) await block(v, 200, []); // warm-up
const results = new Map<string, number[]>(variants.map((v) => [v.name, []]));
for (let b = 0; b < blocks; b++) {
  // Fine-grained interleaving in a rotating order: a burst of load elsewhere hits every variant alike.
  for (let i = 0; i < variants.length; i++) {
    const v = variants[(b + i) % variants.length];
    await block(v, cyclesPerBlock, results.get(v.name)!);
  }
}
const plain = quantile(results.get('plain')!, 0.5);
console.log(`uncontended acquire+release, ${blocks} interleaved blocks x ${cyclesPerBlock} cycles per variant, Node ${process.version}, local redis-server`);
console.log('variant  median µs  p90 µs   throughput ratio to plain (median)');
for (const [name, figures] of results) {
  const median = quantile(figures, 0.5);
  console.log(`${name.padEnd(8)} ${median.toFixed(0).padStart(9)} ${quantile(figures, 0.9).toFixed(0).padStart(7)}   ${(plain / median).toFixed(3)}`);
}

for (const v of variants) await v.client.shutdown();
await sdk.meterProvider.shutdown();
await sdk.tracerProvider.shutdown();
await redis.quit();
await server.stop();
