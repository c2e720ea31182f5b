/**
 * One name, one kind: for every kind of relock object holding a name, every other kind's calls that take
 * or change the object fail with `WrongTypeError` naming the key, the kind found and the kind asked,
 * write nothing, and leave the first holder holding.
 */
import { describe, expect, it } from '@jest/globals';
import { WrongTypeError, type LockClient, type ObjectKind, type RLock } from '../../src/index.js';
import type { Topology } from '../shared/topology.js';
import { uniqueName, waitUntil } from '../support/helpers.js';
import { VARIANTS } from './variants.js';

interface KindCase {
  /** How the tests name it. */
  readonly name: string;
  readonly kind: ObjectKind;
  /** The main key of the object `name`. */
  key(c: LockClient, name: string): string;
  /** Takes `name` as its first holder; resolves to a check that it still holds, and its release. */
  hold(c: LockClient, name: string, t: Topology): Promise<{ holds(): Promise<boolean>; release(): Promise<unknown> }>;
  /** The calls that must fail on a name another kind holds: every acquisition and every write. */
  calls(c: LockClient, name: string): Array<() => Promise<unknown>>;
}

/** A lock kind: held through a handle (a lease, so that the test leaves nothing behind on failure). */
function lockCase(name: string, kind: ObjectKind, of: (c: LockClient, name: string) => RLock): KindCase {
  return {
    name,
    kind,
    key: (c, n) => of(c, n).key,
    async hold(c, n, t) {
      const handle = await of(c, n).acquire({ leaseTime: 30_000 , unit: 'ms' });
      return { holds: async () => (await t.redis.hGet(of(c, n).key, handle.owner)) === '1', release: () => handle.release() };
    },
    calls: (c, n) => [
      () => c.runInContext(() => of(c, n).tryLock()),
      () => c.runInContext(() => of(c, n).acquire({ waitTime: 200, leaseTime: 1000 , unit: 'ms' })),
      () => c.runInContext(() => of(c, n).lock(1000, 'ms')),
    ],
  };
}

const CASES: readonly KindCase[] = [
  // The non-reentrant lock (a plain, unmarked string) is left out: only hash kinds are refused by it and
  // only its WRONGTYPE on hashes tells it apart (test/non-reentrant-lock/non-reentrant-lock.test.ts).
  ...VARIANTS.filter((v) => !v.plain).map((v) => lockCase(v.name, v.kind, v.of)),
  {
    name: 'RSemaphore',
    kind: 'semaphore',
    key: (c, n) => c.getSemaphore(n).key,
    async hold(c, n, t) {
      const semaphore = c.getSemaphore(n);
      await semaphore.trySetPermits(3);
      await semaphore.acquire(1);
      return { holds: async () => (await t.redis.get(semaphore.key)) === '2', release: () => t.redis.del(semaphore.key) };
    },
    calls: (c, n) => {
      const semaphore = c.getSemaphore(n);
      return [
        () => semaphore.tryAcquire(),
        () => semaphore.acquire({ waitTime: 200 , unit: 'ms' }),
        () => semaphore.release(),
        () => semaphore.trySetPermits(1),
        () => semaphore.addPermits(1),
        () => semaphore.drainPermits(),
      ];
    },
  },
  {
    name: 'RPermitExpirableSemaphore',
    kind: 'expirable-semaphore',
    key: (c, n) => c.getPermitExpirableSemaphore(n).key,
    async hold(c, n, t) {
      const semaphore = c.getPermitExpirableSemaphore(n);
      await semaphore.setPermits(2);
      const handle = await semaphore.acquire({ leaseTime: 30_000 , unit: 'ms' });
      const release = async (): Promise<void> => {
        await handle.release();
        await t.redis.del(semaphore.permitsKey);
      };
      return { holds: async () => (await t.command(semaphore.key, ['ZSCORE', semaphore.key, handle.ids[0]!])) !== null, release };
    },
    calls: (c, n) => {
      const semaphore = c.getPermitExpirableSemaphore(n);
      return [
        () => semaphore.tryAcquire(),
        () => semaphore.acquire({ waitTime: 200, leaseTime: 1000 , unit: 'ms' }),
        () => semaphore.setPermits(1),
        () => semaphore.trySetPermits(1),
        () => semaphore.addPermits(1),
      ];
    },
  },
  {
    name: 'RCountDownLatch',
    kind: 'count-down-latch',
    key: (c, n) => c.getCountDownLatch(n).key,
    async hold(c, n, t) {
      const latch = c.getCountDownLatch(n);
      await latch.trySetCount(2);
      return { holds: async () => (await t.redis.hGet(latch.key, 'count')) === '2', release: () => t.redis.del(latch.key) };
    },
    calls: (c, n) => {
      const latch = c.getCountDownLatch(n);
      return [() => latch.trySetCount(1), () => latch.countDown(), () => latch.await(200, 'ms'), () => latch.getCount()];
    },
  },
  {
    name: 'LeaderElection',
    kind: 'leader-election',
    key: (c, n) => c.getLock(n).key,
    async hold(c, n, t) {
      const leadership = await c.getLeaderElection(n).campaign();
      return { holds: async () => !leadership.signal.aborted && (await t.redis.hGet(c.getLock(n).key, 'term')) === String(leadership.term), release: () => leadership.resign() };
    },
    calls: (c, n) => [() => c.getLeaderElection(n).campaign({ signal: AbortSignal.timeout(2000) }), () => c.getLeaderElection(n).leader()],
  },
  {
    name: 'job lock (runExclusive)',
    kind: 'job-lock',
    key: (c, n) => c.getLock(n).key,
    async hold(c, n, t) {
      await c.runExclusive(n, () => undefined, { atMostMs: 30_000, atLeastMs: 30_000 });
      return { holds: async () => (await t.redis.hGet(c.getLock(n).key, 'kind')) === 'job-lock', release: () => t.redis.del(c.getLock(n).key) };
    },
    calls: (c, n) => [() => c.runExclusive(n, () => undefined, { atMostMs: 1000 })],
  },
];

/**
 * Every key of the name's hash tag on its node, each with its type, a digest of its value (`DUMP`) and
 * its PTTL: what a call that writes nothing leaves exactly as it was (its TTL only running down).
 */
async function snapshot(t: Topology, name: string, key: string): Promise<Map<string, { value: string; pttl: number }>> {
  const tag = name.slice(name.indexOf('{'));
  const keys = (await t.keys(`*${tag}*`, key)).sort();
  const reply = (await t.command(key, [
    'EVAL',
    `local out = {}
for i = 1, #KEYS do
  out[i] = {redis.call('type', KEYS[i])['ok'] .. ':' .. redis.sha1hex(redis.call('dump', KEYS[i]) or ''), redis.call('pttl', KEYS[i])}
end
return out`,
    String(keys.length),
    ...keys,
  ])) as Array<[string, number]>;
  return new Map(keys.map((k, i) => [k, { value: reply[i]![0], pttl: Number(reply[i]![1]) }]));
}

/** Registers the matrix: for each kind holding a name, every other kind's calls on it. */
export function kindMatrixTests(topology: () => Topology): void {
  describe('one name, one kind', () => {
    for (const first of CASES) {
      it(`a name held by a ${first.name} refuses every other kind: WrongTypeError naming the key and both kinds, nothing written, the holder still holds`, async () => {
        const t = topology();
        const holderClient = t.client();
        const c = t.client();
        const name = `kinds:{${uniqueName()}}`;
        const held = await first.hold(holderClient, name, t);
        const key = first.key(c, name);
        // The request latches of the holder's own calls go in the client's next batched deletion.
        const tag = name.slice(name.indexOf('{'));
        await waitUntil(async () => (await t.keys(`*relock:unlock:*${tag}*`, key)).length === 0, 2000, 10, "the holder's request latches to be deleted");
        for (const second of CASES) {
          if (second.kind === first.kind) continue;
          const before = await snapshot(t, name, key);
          for (const [i, call] of second.calls(c, name).entries()) {
            const error = await call().then(
              (value: unknown) => new Error(`${second.name} call ${i} on a ${first.name}'s name resolved (${String(value)})`),
              (e: unknown) => e,
            );
            expect({ second: second.name, call: i, error }).toEqual({
              second: second.name,
              call: i,
              error: expect.objectContaining({ constructor: WrongTypeError, key, foundKind: first.kind, askedKind: second.kind }),
            });
          }
          const after = await snapshot(t, name, key);
          expect({ second: second.name, keys: [...after.keys()] }).toEqual({ second: second.name, keys: [...before.keys()] });
          for (const [k, { value, pttl }] of after) {
            expect({ second: second.name, key: k, value }).toEqual({ second: second.name, key: k, value: before.get(k)!.value });
            expect(Math.sign(pttl)).toBe(Math.sign(before.get(k)!.pttl));
            expect(pttl).toBeLessThanOrEqual(before.get(k)!.pttl);
          }
          expect(await held.holds()).toBe(true);
          expect(c.stats().subscriptions).toBe(0);
        }
        await held.release();
      });
    }
  });
}
