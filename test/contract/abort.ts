/**
 * Aborting a blocking call rejects it with exactly `signal.reason`, never resolves it afterwards, and
 * leaves nothing behind: for every primitive's blocking call, aborted at random moments (a command of it
 * often in flight) while the holder releases at random moments too, with the default reason and a given
 * one, 1,000 tries per primitive (standalone; 200 on the Cluster) run concurrently in batches of 100.
 */
import { describe, expect, it } from '@jest/globals';
import type { LockClient } from '../../src/index.js';
import type { Topology } from '../shared/topology.js';
import { uniqueName, waitUntil } from '../support/helpers.js';
import { VARIANTS } from './variants.js';

const BATCH = 100;

type Release = () => Promise<unknown>;

interface AbortCase {
  readonly name: string;
  /** Takes `name` as its holder (after setting up what the primitive needs); resolves to its release. */
  hold(h: LockClient, name: string): Promise<Release>;
  /** The blocking call under test, by other owners (`w`: three clients); resolves to the release of what it got. */
  wait(w: readonly LockClient[], name: string, signal: AbortSignal): Promise<Release>;
  /** Keys of `name` that stay by design once everything is released, with the value they must hold ('' for any). */
  stays?(h: LockClient, name: string): Record<string, string>;
}

const handleRelease = (handle: { release(): Promise<void> }): Release => () => handle.release();

const CASES: readonly AbortCase[] = [
  ...VARIANTS.map(
    (v): AbortCase => ({
      name: v.name,
      hold: async (h, n) => handleRelease(await (v.rival ?? v.of)(h, n).acquire({ leaseTime: 10_000 , unit: 'ms' })),
      wait: async (w, n, signal) => handleRelease(await v.of(w[0]!, n).acquire({ signal })),
      stays: (h, n) => (v.kind === 'fenced-lock' ? { [h.getFencedLock(n).fenceKey]: '' } : {}),
    }),
  ),
  {
    name: 'RSemaphore',
    async hold(h, n) {
      const semaphore = h.getSemaphore(n);
      await semaphore.trySetPermits(1);
      await semaphore.acquire();
      return () => semaphore.release();
    },
    wait: async (w, n, signal) => {
      const semaphore = w[0]!.getSemaphore(n);
      await semaphore.acquire({ signal });
      return () => semaphore.release();
    },
    stays: (h, n) => ({ [h.getSemaphore(n).key]: '1' }),
  },
  {
    name: 'RPermitExpirableSemaphore',
    async hold(h, n) {
      const semaphore = h.getPermitExpirableSemaphore(n);
      await semaphore.setPermits(1);
      return handleRelease(await semaphore.acquire({ leaseTime: 10_000 , unit: 'ms' }));
    },
    wait: async (w, n, signal) => handleRelease(await w[0]!.getPermitExpirableSemaphore(n).acquire({ signal })),
    stays: (h, n) => ({ [h.getPermitExpirableSemaphore(n).permitsKey]: '1' }),
  },
  {
    name: 'RCountDownLatch',
    async hold(h, n) {
      const latch = h.getCountDownLatch(n);
      await latch.trySetCount(1);
      return () => latch.countDown();
    },
    wait: async (w, n, signal) => {
      await w[0]!.getCountDownLatch(n).await({ signal });
      return async () => undefined;
    },
  },
  {
    name: 'MultiLock',
    hold: async (h, n) => handleRelease(await h.getLock(`${n}:a`).acquire({ leaseTime: 10_000 , unit: 'ms' })),
    wait: async ([w], n, signal) => handleRelease(await w!.getMultiLock(w!.getLock(`${n}:a`), w!.getLock(`${n}:b`)).acquire({ signal })),
  },
  {
    name: 'RedLock',
    async hold(h, n) {
      const held = [await h.getLock(`${n}:1`).acquire({ leaseTime: 10_000 , unit: 'ms' }), await h.getLock(`${n}:2`).acquire({ leaseTime: 10_000 , unit: 'ms' })];
      return () => Promise.all(held.map((handle) => handle.release()));
    },
    wait: async (w, n, signal) => handleRelease(await w[0]!.getRedLock(...w.map((c, i) => c.getLock(`${n}:${i + 1}`))).acquire({ signal })),
  },
];

/** Resolves after `turns` turns of the event loop (`setImmediate`): a random moment among the I/O going on. */
async function afterTurns(turns: number): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

const randomTurns = (): number => Math.floor(Math.random() * 40);

/** What one try saw: `resolved` (before the abort), `rejected` (with the reason), or a violation. */
type Outcome = 'resolved' | 'rejected' | { violation: string };

async function oneTry(c: AbortCase, h: LockClient, w: readonly LockClient[], name: string, custom: boolean): Promise<Outcome> {
  const release = await c.hold(h, name);
  const controller = new AbortController();
  const outcome = c.wait(w, name, controller.signal).then(
    (done) => ({ resolved: true as const, afterAbort: controller.signal.aborted, done }),
    (error: unknown) => ({ resolved: false as const, error }),
  );
  await Promise.all([
    afterTurns(randomTurns()).then(release),
    afterTurns(randomTurns()).then(() => controller.abort(custom ? new Error(`given reason for ${name}`) : undefined)),
  ]);
  const result = await outcome;
  if (result.resolved) {
    await result.done();
    return result.afterAbort ? { violation: `${name}: resolved after the abort` } : 'resolved';
  }
  if (result.error === controller.signal.reason) return 'rejected';
  return { violation: `${name}: rejected with ${String(result.error)} instead of the signal's reason ${String(controller.signal.reason)}` };
}

/** Registers the abort tests of every primitive: `tries` per primitive (a multiple of 100). */
export function abortTests(topology: () => Topology, tries = 1000): void {
  describe('abort', () => {
    for (const c of CASES) {
      it(`${c.name}: ${tries} waits aborted at random moments (default and given reasons) reject with exactly signal.reason, never resolve after the abort, and leave nothing`, async () => {
        const t = topology();
        const h = t.client();
        const w = [t.client(), t.client(), t.client()];
        const counts = { resolved: 0, rejected: 0 };
        const violations: string[] = [];
        for (let batch = 0; batch < tries / BATCH; batch++) {
          // One hash tag per batch: every key of the batch in one slot, found with one SCAN.
          const tag = `{${uniqueName('abort')}}`;
          const names = Array.from({ length: BATCH }, (_, i) => `abort:${tag}:${i}`);
          const outcomes = await Promise.all(names.map((name, i) => oneTry(c, h, w, name, i % 2 === 1)));
          for (const outcome of outcomes) {
            if (typeof outcome === 'string') counts[outcome]++;
            else violations.push(outcome.violation);
          }
          const stays: Record<string, string> = Object.assign({}, ...names.map((name) => c.stays?.(h, name) ?? {}));
          const leftOver = async (): Promise<string[]> => (await t.keys(`*${tag}*`, names[0]!)).filter((key) => !(key in stays));
          await waitUntil(async () => (await leftOver()).length === 0, 5000, 20, 'every key of the batch to be gone').catch(async () => {
            violations.push(`left behind: ${(await leftOver()).join(', ')}`);
          });
          for (const [key, value] of Object.entries(stays)) {
            const found = String(await t.redis.get(key));
            if (value !== '' && found !== value) violations.push(`${key} holds ${found}, not ${value}: a permit was not given back`);
            await t.redis.del(key);
          }
        }
        for (const client of [h, ...w]) {
          await waitUntil(() => client.stats().watchdogHolds === 0 && client.stats().subscriptions === 0, 2000, 10, 'no hold or subscription left');
        }
        expect(violations.slice(0, 10)).toEqual([]);
        expect(counts.resolved + counts.rejected).toBe(tries);
        expect(counts.rejected).toBeGreaterThan(0);
      });
    }
  });
}
