/**
 * OpenTelemetry metrics and spans of every kind of lock, read through the SDK's in-memory exporters,
 * after real operations on a real Redis: a contended lock and unlock, a timeout, an abort and a lost lock.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as api from '@opentelemetry/api';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { IllegalMonitorStateError, InvalidArgumentError, runInContext, type LockClient, type LockLostEvent, type RLock } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { lockClient, sleep, uniqueName, waitUntil } from '../support/helpers.js';
import { histogram, observerReady, point, TestSdk } from './otel-support.js';

const env = useRedis();
let sdk: TestSdk;

beforeAll(() => {
  sdk = new TestSdk();
});
afterAll(() => sdk.close());
afterEach(() => sdk.spanExporter.reset());

/**
 * A client whose watchdog renews every 500 ms (lockWatchdogTimeout 1500 ms). A hold is lost as
 * `renewal-late`, by design, when a renewal is not answered by its local deadline: at 300 ms a stall of
 * about 200 ms did it once in a clean-clone rehearsal (Node 26, `lockLost` said `renewal-late` where the test deletes the key and
 * expects `expired`); at 1500 ms it takes a stall of about 1 s, longer than any seen (675 ms).
 */
async function client(options: { recordNames?: boolean } = {}): Promise<LockClient> {
  const made = lockClient(env.redis, { lockWatchdogTimeout: 1500, otel: { meterProvider: sdk.meterProvider, tracerProvider: sdk.tracerProvider, ...options } });
  await observerReady(made);
  return made;
}

/** Waits until `metric` has the value `value` for `attributes`. */
const reaches = (metric: string, attributes: Record<string, string>, value: number): Promise<unknown> =>
  waitUntil(async () => point((await sdk.metrics()).get(metric), attributes) === value, 5000, 10, `${metric} = ${value}`);

const spans = (name: string): ReadableSpan[] => sdk.spanExporter.getFinishedSpans().filter((s) => s.name === name);

describe('OpenTelemetry', () => {
  it('records every metric with its unit and attributes, and spans under the caller, for a contended lock, a timeout, an abort and a loss', async () => {
    const relock = await client();
    const name = uniqueName('otel');
    const lock = relock.getLock(name);
    const kind = { 'relock.kind': 'lock' };
    let callerSpanId = '';
    await sdk.inSpan('caller', async () => {
      callerSpanId = trace.getActiveSpan()!.spanContext().spanId;
      const first = await lock.acquire();
      const second = lock.acquire({ waitMs: 5000 });
      await reaches('relock.waiters', kind, 1);
      expect(point((await sdk.metrics()).get('relock.held'), kind)).toBe(1);
      await sleep(50); // a hold and a wait of at least 50 ms
      await first.release();
      const held = await second;
      expect(await relock.getLock(name).tryLock(50, 'ms')).toBe(false);
      const aborter = new AbortController();
      const aborted = lock.acquire({ signal: aborter.signal });
      await reaches('relock.waiters', kind, 1);
      aborter.abort(new Error('stop waiting'));
      await expect(aborted).rejects.toThrow('stop waiting');
      await held.release();
    });
    const lostHold = await lock.acquire();
    const renewed = async (): Promise<number> => point((await sdk.metrics()).get('relock.watchdog.renewals'), { 'relock.outcome': 'renewed' }) ?? 0;
    const renewedBefore = await renewed();
    await waitUntil(async () => (await renewed()) > renewedBefore, 5000, 10, 'a renewal of the hold');
    const lost = new Promise<LockLostEvent>((resolve) => relock.once('lockLost', resolve));
    await env.redis.del(name);
    expect((await lost).reason).toBe('expired');
    expect(point((await sdk.metrics()).get('relock.held'), kind)).toBe(0); // dropped at the loss, before the release fails
    await expect(lostHold.release()).rejects.toThrow(IllegalMonitorStateError);

    const metrics = await sdk.metrics();
    const outcome = (o: string): Record<string, string> => ({ ...kind, 'relock.outcome': o });
    const acquireDuration = metrics.get('relock.acquire.duration');
    expect(acquireDuration?.descriptor).toMatchObject({ unit: 's', type: 'HISTOGRAM' });
    expect(histogram(acquireDuration, outcome('acquired'))?.count).toBe(3);
    expect(histogram(acquireDuration, outcome('acquired'))!.max).toBeGreaterThanOrEqual(0.05);
    expect(histogram(acquireDuration, outcome('timeout'))?.count).toBe(1);
    expect(histogram(acquireDuration, outcome('timeout'))!.min).toBeGreaterThanOrEqual(0.05);
    expect(histogram(acquireDuration, outcome('aborted'))?.count).toBe(1);
    const acquires = metrics.get('relock.acquires');
    expect(acquires?.descriptor).toMatchObject({ unit: '{acquisition}', type: 'COUNTER' });
    expect([point(acquires, outcome('acquired')), point(acquires, outcome('timeout')), point(acquires, outcome('aborted')), point(acquires, outcome('error'))]).toEqual([3, 1, 1, undefined]);
    const holdDuration = metrics.get('relock.hold.duration');
    expect(holdDuration?.descriptor).toMatchObject({ unit: 's', type: 'HISTOGRAM' });
    expect(histogram(holdDuration, kind)?.count).toBe(2);
    expect(histogram(holdDuration, kind)!.max).toBeGreaterThanOrEqual(0.05);
    expect(metrics.get('relock.waiters')?.descriptor).toMatchObject({ unit: '{waiter}', type: 'UP_DOWN_COUNTER' });
    expect(point(metrics.get('relock.waiters'), kind)).toBe(0);
    expect(metrics.get('relock.held')?.descriptor).toMatchObject({ unit: '{hold}', type: 'UP_DOWN_COUNTER' });
    expect(point(metrics.get('relock.held'), kind)).toBe(0);
    expect(metrics.get('relock.lost')?.descriptor).toMatchObject({ unit: '{hold}', type: 'COUNTER' });
    expect(point(metrics.get('relock.lost'), { ...kind, 'relock.reason': 'expired' })).toBe(1);
    for (const metric of metrics.values()) for (const p of metric.dataPoints) expect(Object.values(p.attributes)).not.toContain(name);
    expect(metrics.get('relock.watchdog.renewals')?.descriptor).toMatchObject({ unit: '{hold}', type: 'COUNTER' });
    expect(point(metrics.get('relock.watchdog.renewals'), { 'relock.outcome': 'expired' })).toBe(1);
    expect(metrics.get('relock.watchdog.calls')?.descriptor).toMatchObject({ unit: '{call}', type: 'COUNTER' });
    const calls = point(metrics.get('relock.watchdog.calls'), { 'relock.outcome': 'ok' })!;
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(point(metrics.get('relock.watchdog.calls'), { 'relock.outcome': 'error' })).toBeUndefined();
    const requests = metrics.get('relock.redis.requests');
    expect(requests?.descriptor).toMatchObject({ unit: '{request}', type: 'COUNTER' });
    const attempts = spans('relock.acquire').reduce((sum, s) => sum + (s.attributes['relock.attempts'] as number), 0);
    expect([point(requests, { 'relock.request': 'lock.acquire' }), point(requests, { 'relock.request': 'lock.unlock' }), point(requests, { 'relock.request': 'watchdog.renew' })]).toEqual([attempts, 3, calls]);

    const acquired = spans('relock.acquire');
    expect(acquired.map((s) => s.attributes['relock.outcome'])).toEqual(['acquired', 'acquired', 'timeout', 'aborted', 'acquired']);
    expect(acquired.map((s) => s.parentSpanContext?.spanId)).toEqual([callerSpanId, callerSpanId, callerSpanId, callerSpanId, undefined]);
    expect(acquired.map((s) => s.status.code)).toEqual([SpanStatusCode.UNSET, SpanStatusCode.UNSET, SpanStatusCode.ERROR, SpanStatusCode.ERROR, SpanStatusCode.UNSET]);
    expect(acquired[0]!.attributes).toMatchObject({ 'relock.kind': 'lock', 'relock.name': name, 'relock.attempts': 1, 'relock.woken_by': 'none', 'relock.wait_time_ms': -1 });
    expect(acquired[1]!.attributes).toMatchObject({ 'relock.woken_by': 'message', 'relock.wait_time_ms': 5000 });
    expect(acquired[1]!.attributes['relock.attempts']).toBeGreaterThanOrEqual(2);
    const released = spans('relock.release');
    expect(released.map((s) => s.status.code)).toEqual([SpanStatusCode.UNSET, SpanStatusCode.UNSET, SpanStatusCode.ERROR]);
    expect(released.map((s) => s.parentSpanContext?.spanId)).toEqual([callerSpanId, callerSpanId, undefined]);
  });

  it('names each kind of lock in relock.kind', async () => {
    const relock = await client();
    const rw = relock.getReadWriteLock(uniqueName('otel-rw'));
    const locks: [string, RLock][] = [
      ['fair_lock', relock.getFairLock(uniqueName('otel'))],
      ['read_lock', rw.readLock()],
      ['write_lock', rw.writeLock()],
      ['fenced_lock', relock.getFencedLock(uniqueName('otel'))],
      ['spin_lock', relock.getSpinLock(uniqueName('otel'))],
    ];
    for (const [, lock] of locks) await (await lock.acquire()).release();
    const metrics = await sdk.metrics();
    for (const [kind] of locks) {
      expect([kind, point(metrics.get('relock.acquires'), { 'relock.kind': kind, 'relock.outcome': 'acquired' })]).toEqual([kind, 1]);
      expect([kind, histogram(metrics.get('relock.hold.duration'), { 'relock.kind': kind })?.count]).toEqual([kind, 1]);
      expect([kind, point(metrics.get('relock.held'), { 'relock.kind': kind })]).toEqual([kind, 0]);
    }
  });

  it('records semaphores, expirable permits, latches, multi-locks and RedLocks under their kinds', async () => {
    const relock = await client();
    const other = await client();
    const locksBefore = point((await sdk.metrics()).get('relock.acquires'), { 'relock.kind': 'lock', 'relock.outcome': 'acquired' }) ?? 0;
    const semaphore = relock.getSemaphore(uniqueName('otel'));
    await semaphore.trySetPermits(1);
    await semaphore.acquire();
    expect(await semaphore.tryAcquire(10, 'ms')).toBe(false);
    await semaphore.release();
    const permits = relock.getPermitExpirableSemaphore(uniqueName('otel'));
    await permits.trySetPermits(2);
    const two = await permits.acquire({ permits: 2 });
    expect(point((await sdk.metrics()).get('relock.held'), { 'relock.kind': 'permit_expirable_semaphore' })).toBe(2);
    await two.release();
    const latch = relock.getCountDownLatch(uniqueName('otel'));
    await latch.trySetCount(1);
    expect(await latch.await(10, 'ms')).toBe(false);
    await latch.countDown();
    await latch.await();
    const multi = relock.getMultiLock(relock.getLock(uniqueName('otel')), relock.getLock(uniqueName('otel')));
    for (let i = 0; i < 2; i++) await (await multi.acquire()).release();
    await (await relock.getRedLock(relock.getLock(uniqueName('otel')), other.getLock(uniqueName('otel'))).acquire()).release();

    const metrics = await sdk.metrics();
    const acquires = (kind: string, outcome: string): number | undefined => point(metrics.get('relock.acquires'), { 'relock.kind': kind, 'relock.outcome': outcome });
    expect([acquires('semaphore', 'acquired'), acquires('semaphore', 'timeout')]).toEqual([1, 1]);
    expect(acquires('permit_expirable_semaphore', 'acquired')).toBe(1);
    expect([acquires('count_down_latch', 'acquired'), acquires('count_down_latch', 'timeout')]).toEqual([1, 1]);
    expect([acquires('multi_lock', 'acquired'), acquires('red_lock', 'acquired'), acquires('lock', 'acquired')! - locksBefore]).toEqual([2, 1, 6]);
    expect(point(metrics.get('relock.held'), { 'relock.kind': 'permit_expirable_semaphore' })).toBe(0);
    expect(histogram(metrics.get('relock.hold.duration'), { 'relock.kind': 'permit_expirable_semaphore' })?.count).toBe(2);
    expect(histogram(metrics.get('relock.hold.duration'), { 'relock.kind': 'semaphore' })).toBeUndefined();
    const groups = spans('relock.acquire').filter((s) => ['multi_lock', 'red_lock'].includes(s.attributes['relock.kind'] as string));
    const members = spans('relock.acquire').filter((s) => s.attributes['relock.kind'] === 'lock');
    expect(members.map((m) => groups.some((g) => g.spanContext().spanId === m.parentSpanContext?.spanId))).toEqual([true, true, true, true, true, true]);
  });

  it('drops from relock.held a hold whose lease ran out when its release finds it gone', async () => {
    const relock = await client();
    const fenced = { 'relock.kind': 'fenced_lock' };
    const heldNow = async (): Promise<number> => point((await sdk.metrics()).get('relock.held'), fenced) ?? 0;
    const before = await heldNow();
    const lock = relock.getFencedLock(uniqueName('otel'));
    const handle = await lock.acquire({ leaseMs: 30 });
    expect(await heldNow()).toBe(before + 1);
    await waitUntil(async () => !(await lock.isLocked()), 5000, 5, 'the lease to run out');
    await expect(handle.release()).rejects.toThrow(IllegalMonitorStateError);
    expect(await heldNow()).toBe(before);
  });

  it('a reentrant hold (hold count 2) that is lost leaves relock.held at 0: found by the watchdog, or by the unlock of a lease that ran out (issue 28)', async () => {
    const relock = await client();
    const kind = { 'relock.kind': 'lock' };
    const heldNow = async (): Promise<number> => point((await sdk.metrics()).get('relock.held'), kind) ?? 0;
    const before = await heldNow();

    // Renewed by the watchdog; its key deleted: the renewal reports the loss.
    await runInContext(async () => {
      const lock = relock.getLock(uniqueName('otel'));
      await lock.lock();
      await lock.lock();
      expect(await lock.getHoldCount()).toBe(2);
      expect(await heldNow()).toBe(before + 2);
      const lost = new Promise<LockLostEvent>((resolve) => relock.once('lockLost', resolve));
      await env.redis.del(lock.key);
      expect((await lost).reason).toBe('expired');
      expect(await heldNow()).toBe(before);
      await expect(lock.unlock()).rejects.toThrow(IllegalMonitorStateError);
      expect(await heldNow()).toBe(before);
    });

    // With a lease, not renewed: the lease runs out and the unlock finds the hold gone.
    await runInContext(async () => {
      const lock = relock.getLock(uniqueName('otel'));
      expect(await lock.tryLock(0, 60, 'ms')).toBe(true);
      expect(await lock.tryLock(0, 60, 'ms')).toBe(true);
      expect(await heldNow()).toBe(before + 2);
      await waitUntil(async () => !(await lock.isLocked()), 5000, 5, 'the lease to run out');
      await expect(lock.unlock()).rejects.toThrow(IllegalMonitorStateError);
      expect(await heldNow()).toBe(before);
    });
  });

  it('records from the first operation when given the API module, and refuses otel options of the wrong shape', async () => {
    const relock = lockClient(env.redis, { otel: { api, meterProvider: sdk.meterProvider, tracerProvider: sdk.tracerProvider } });
    await (await relock.getLock(uniqueName('otel')).acquire()).release();
    expect(spans('relock.acquire')).toHaveLength(1);
    for (const [otel, field] of [
      [{ meterProvider: {} }, 'otel.meterProvider'],
      [{ tracerProvider: 1 }, 'otel.tracerProvider'],
      [{ recordNames: 'no' }, 'otel.recordNames'],
      [{ api: {} }, 'otel.api'],
      ['on', 'otel'],
    ] as const) {
      expect(() => lockClient(env.redis, { otel: otel as never })).toThrow(expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining(field) }));
    }
  });

  it('refuses an otel.api that has metrics but no trace, or trace but no metrics (it must be the whole API module)', () => {
    for (const half of [{ metrics: api.metrics }, { trace: api.trace }, { metrics: api.metrics, trace: {} }, { metrics: {}, trace: api.trace }]) {
      let error: unknown;
      try {
        lockClient(env.redis, { otel: { api: half as never } });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect([(error as InvalidArgumentError).argument, (error as Error).message]).toEqual(['otel.api', "invalid otel.api: must be the @opentelemetry/api module (import * as api from '@opentelemetry/api')"]);
    }
    // The whole module is accepted.
    expect(lockClient(env.redis, { otel: { api } })).toBeDefined();
  });

  it('leaves the name out of spans with recordNames: false', async () => {
    const relock = await client({ recordNames: false });
    const lock = relock.getLock(uniqueName('otel'));
    await (await lock.acquire()).release();
    expect(spans('relock.acquire')[0]!.attributes).toEqual(expect.not.objectContaining({ 'relock.name': expect.anything() }));
    expect(spans('relock.acquire')[0]!.attributes['relock.kind']).toBe('lock');
    expect(spans('relock.release')[0]!.attributes['relock.name']).toBeUndefined();
  });
});
