/**
 * `npm run bench:otel`: what observability costs on the uncontended cycle (acquire + release of a free
 * lock, one task, its own redis-server). Variants, run in interleaved rounds in one process:
 * - plain: `otel: false`, no diagnostics-channel subscriber (the instrumentation's idle path);
 * - dc: `otel: false`, a subscriber on every `relock:*` channel;
 * - api: `@opentelemetry/api` loaded, no SDK registered (its no-op meter and tracer);
 * - sdk: the OpenTelemetry SDK with in-memory exporters (every metric and span recorded).
 * Prints cycles/s per variant (median of rounds) and each one's ratio to plain. Options: --rounds N
 * (default 7), --ms N per variant and round (default 1500).
 */
import { channel, tracingChannel } from 'node:diagnostics_channel';
import { parseArgs } from 'node:util';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createClient } from 'redis';
import { createLockClient, type LockClient } from '../../src/index.js';
import type { Core } from '../../src/core.js';
import { startRedis } from '../../test/support/redis.js';
import { median } from './measure.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, ms: { type: 'string', default: '1500' } } });
const rounds = Number(values.rounds);
const windowMs = Number(values.ms);

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
  for (const name of ['relock:acquire', 'relock:release']) (on ? tracingChannel(name).subscribe(subscribers) : tracingChannel(name).unsubscribe(subscribers));
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

/** Acquire/release cycles per second of `v` during one window. */
async function window(v: Variant): Promise<number> {
  subscribe(v.dc);
  const lock = v.client.getLock(`bench-otel:${v.name}`);
  const start = performance.now();
  let cycles = 0;
  while (performance.now() - start < windowMs) {
    await (await lock.acquire({ waitMs: 0 })).release();
    cycles++;
  }
  subscribe(false);
  spans.reset();
  return (cycles * 1000) / (performance.now() - start);
}

for (const v of variants) await window({ ...v }); // warm-up
const results = new Map<string, number[]>(variants.map((v) => [v.name, []]));
for (let r = 0; r < rounds; r++) {
  const order = [...variants.slice(r % variants.length), ...variants.slice(0, r % variants.length)];
  for (const v of order) results.get(v.name)!.push(await window(v));
  process.stderr.write(`round ${r + 1}/${rounds}\n`);
}
const plain = median(results.get('plain')!);
console.log(`uncontended acquire+release, ${rounds} rounds x ${windowMs} ms per variant, Node ${process.version}, local redis-server`);
for (const [name, figures] of results) console.log(`${name.padEnd(6)} ${median(figures).toFixed(0).padStart(7)} cycles/s  ratio to plain ${(median(figures) / plain).toFixed(3)}  (rounds: ${figures.map((f) => f.toFixed(0)).join(' ')})`);

for (const v of variants) await v.client.shutdown();
await sdk.meterProvider.shutdown();
await sdk.tracerProvider.shutdown();
await redis.quit();
await server.stop();
