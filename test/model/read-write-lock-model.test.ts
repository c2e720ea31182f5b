/**
 * Model-based property test of RReadWriteLock (fast-check `asyncModelRun`, see test/support/model.ts):
 * random sequences of commands over three owners (lock contexts) on two lock clients, each client talking to
 * a real Redis through its own TCP proxy, on one read-write lock.
 *
 * The invariant a user relies on: no writer while another owner's read lease lives, and no reader while
 * another owner's write lease lives. It is checked in Redis after every step: the live holds are the
 * members of the leases set (`<field>:<n>`) whose deadline, in Redis server time, is still ahead; a live
 * write hold of one owner and a live hold of another never coexist. The model is every owner's holds of
 * each side, newest last, each with the window (local time) in which its lease ends; Redis must hold at
 * least the model's surely live holds of each field and at most its maybe live ones. An acquisition must be
 * refused while another owner surely holds what excludes it, and granted when no other owner may hold
 * anything; between the two (a lease ending just now, a stale mode), either is allowed.
 *
 * Commands: read and write acquisitions with a short lease or a long one (reentry when the owner holds that
 * side; a downgrade when it reads while it writes), unlock of either side (the newest hold), a writer that
 * waits for the readers' short leases to end, waiting the short leases out. Fault steps: the acquire's reply
 * lost (the retry must recognise the first call: no second hold), the first attempt refused before it ran
 * (connection reset), the lock's keys lost (a restart).
 *
 * Bounded for `npm test` (seeded, `RELOCK_MODEL_RUNS` runs, default 40, time limit 15 s); `npm run soak`
 * runs it longer. `RELOCK_MODEL_SEED` replays a seed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createLockClient, type LockClient, type RReadWriteLock } from '../../src/index.js';
import { auxName } from '../../src/keys.js';
import { RW_ACQUIRE } from '../../src/read-write-lock/scripts.js';
import { useRedis } from '../support/harness.js';
import { contextRunner, serverTime, sleep, uniqueName } from '../support/helpers.js';
import { checkModel, modelTimeout, ModelStep, type ModelRun } from '../support/model.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';

const CLIENTS = 2;
const OWNERS = 3;
const clientOf = (owner: number): number => owner % CLIENTS;
const SHORT_MS = 250;
const LONG_MS = 60_000;
/** Room between the model's clock and Redis's (a reply's way back, the ms granularity of `TIME`). */
const SLACK_MS = 40;
/** The wait time of a waiting writer and of a faulted acquire (it retries within it). */
const WAIT_MS = 10_000;
/** A granted acquire, as RESP2 or RESP3 (nil). */
const GRANTED = ['$-1\r\n', '_\r\n'];

type Side = 'read' | 'write';
interface Hold {
  from: number;
  by: number;
}
interface Model {
  /** Owner → side → its holds, oldest first. */
  holds: Array<Record<Side, Hold[]>>;
  /** Owner → its owner id in Redis (from its first grant; its read field, `<id>:write` its write field). */
  ids: Map<number, string>;
}

interface Real {
  clients: LockClient[];
  proxies: TcpProxy[];
  runners: Array<<T>(fn: () => T) => T>;
  locks: RReadWriteLock[];
  check(m: Model): Promise<void>;
}

const live = (h: Hold, now: number): boolean => now < h.from;
const maybe = (h: Hold, now: number): boolean => now <= h.by;
const others = (m: Readonly<Model>, owner: number): Array<Record<Side, Hold[]>> => m.holds.filter((_, o) => o !== owner);
const fieldOf = (id: string, side: Side): string => (side === 'write' ? `${id}:write` : id);

const harness = useRedis();
let proxies: TcpProxy[] = [];
beforeAll(async () => {
  proxies = await Promise.all(Array.from({ length: CLIENTS }, () => startProxy('127.0.0.1', harness.server.port)));
});
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
});

/** Live holds per field in Redis (members of the leases set whose deadline is ahead of Redis's clock). */
async function liveHolds(leasesKey: string): Promise<Map<string, number>> {
  const now = await serverTime(harness.redis);
  const members = await harness.redis.zRangeWithScores(leasesKey, 0, -1);
  const counts = new Map<string, number>();
  for (const { value, score } of members) {
    if (score <= now) continue;
    const field = value.slice(0, value.lastIndexOf(':'));
    counts.set(field, (counts.get(field) ?? 0) + 1);
  }
  return counts;
}

type Fault = 'none' | 'reply lost' | 'refused';
abstract class Step extends ModelStep<Model, Real> {}

class Acquire extends Step {
  constructor(readonly owner: number, readonly side: Side, readonly short: boolean, readonly fault: Fault, readonly waitMs = 0) {
    super();
  }
  /** Whether it must be refused, and whether it must be granted, now. */
  private expected(m: Readonly<Model>): { refuse: boolean; grant: boolean } {
    const now = performance.now();
    const rest = others(m, this.owner);
    const refuse = rest.some((h) => h.write.some((x) => live(x, now)) || (this.side === 'write' && h.read.some((x) => live(x, now))));
    const grant = !rest.some((h) => [...h.read, ...h.write].some((x) => maybe(x, now)));
    return { refuse, grant };
  }
  override check(m: Readonly<Model>): boolean {
    const mine = m.holds[this.owner]!;
    // No upgrade (a write while the owner reads, without writing): relock refuses it with LockUpgradeError.
    if (this.side === 'write' && mine.read.length > 0 && mine.write.length === 0) return false;
    // A faulted or waiting attempt is drawn only when it is granted.
    return (this.fault === 'none' && this.waitMs === 0) || this.expected(m).grant;
  }
  async apply(m: Model, r: Real): Promise<void> {
    const proxy = r.proxies[clientOf(this.owner)]!;
    if (this.fault === 'reply lost') void proxy.loseReply({ match: RW_ACQUIRE.sha, replyPrefix: GRANTED });
    if (this.fault === 'refused') void proxy.refuseRequest(RW_ACQUIRE.sha);
    const { refuse, grant } = this.expected(m);
    const lease = this.short ? SHORT_MS : LONG_MS;
    const sent = performance.now();
    try {
      const rw = r.locks[this.owner]!;
      const lock = this.side === 'read' ? rw.readLock() : rw.writeLock();
      const waitMs = this.fault === 'none' ? this.waitMs : WAIT_MS;
      const result = await r.runners[this.owner]!(() => lock.acquire({ waitMs, leaseMs: lease })).catch((e: Error) => e);
      if (result instanceof Error) {
        expect(result.name).toBe('LockAcquireTimeoutError');
        expect({ refusedWhileFree: grant }).toEqual({ refusedWhileFree: false });
      } else {
        expect({ grantedWhileHeld: refuse && this.waitMs === 0 }).toEqual({ grantedWhileHeld: false });
        m.ids.set(this.owner, result.owner.replace(/:write$/, ''));
        m.holds[this.owner]![this.side].push({ from: sent + lease - 2, by: performance.now() + lease + SLACK_MS });
      }
    } finally {
      proxy.disarm();
    }
  }
  toString(): string {
    return `${this.side}(owner ${this.owner}, ${this.short ? 'short' : 'long'}${this.fault === 'none' ? '' : `, ${this.fault}`}${this.waitMs ? `, wait ${this.waitMs}` : ''})`;
  }
}

class Unlock extends Step {
  constructor(readonly owner: number, readonly side: Side) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    const now = performance.now();
    return m.holds[this.owner]![this.side].some((h) => live(h, now));
  }
  async apply(m: Model, r: Real): Promise<void> {
    const rw = r.locks[this.owner]!;
    const lock = this.side === 'read' ? rw.readLock() : rw.writeLock();
    await r.runners[this.owner]!(() => lock.unlock());
    const now = performance.now();
    const mine = m.holds[this.owner]![this.side];
    // The newest hold goes; the last live one takes the ended ones with it.
    mine.pop();
    if (!mine.some((h) => maybe(h, now))) mine.length = 0;
  }
  toString(): string {
    return `unlock ${this.side}(owner ${this.owner})`;
  }
}

/** A writer while other owners hold short read leases only: it waits until they end, then writes. */
class WaitingWriter extends Step {
  constructor(readonly owner: number) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    const now = performance.now();
    const rest = others(m, this.owner);
    const mine = m.holds[this.owner]!;
    return mine.read.length === 0 && rest.every((h) => h.write.every((x) => !maybe(x, now)) && h.read.every((x) => x.by < now + SHORT_MS + SLACK_MS)) && rest.some((h) => h.read.some((x) => live(x, now)));
  }
  async apply(m: Model, r: Real): Promise<void> {
    const ends = Math.max(...others(m, this.owner).flatMap((h) => h.read.map((x) => x.from)));
    const sent = performance.now();
    const result = await r.runners[this.owner]!(() => r.locks[this.owner]!.writeLock().acquire({ waitMs: WAIT_MS, leaseMs: LONG_MS }));
    expect({ grantedBeforeReadersLeft: performance.now() < ends }).toEqual({ grantedBeforeReadersLeft: false });
    m.ids.set(this.owner, result.owner.replace(/:write$/, ''));
    m.holds[this.owner]!.write.push({ from: sent + LONG_MS, by: Infinity });
  }
  toString(): string {
    return `waitingWriter(owner ${this.owner})`;
  }
}

class WaitOut extends Step {
  async apply(): Promise<void> {
    await sleep(SHORT_MS + SLACK_MS + 10);
  }
  toString(): string {
    return 'waitOut()';
  }
}

/** Redis loses the lock's keys (a restart without persistence). */
class KeysLost extends Step {
  async apply(m: Model, r: Real): Promise<void> {
    await harness.redis.del([r.locks[0]!.key, leasesKey(r)]);
    for (const h of m.holds) h.read.length = h.write.length = 0;
  }
  toString(): string {
    return 'keysLost()';
  }
}

/** The leases set: `relock:leases:{name}` (see RReadWriteLock). */
const leasesKey = (r: Real): string => auxName('', 'leases', r.locks[0]!.key);

const owner = fc.integer({ min: 0, max: OWNERS - 1 });
const side = fc.constantFrom<Side>('read', 'write');
const step = fc.oneof(
  { weight: 10, arbitrary: fc.tuple(owner, side, fc.boolean(), fc.constantFrom<Fault>('none', 'none', 'none', 'reply lost', 'refused')).map(([o, s, l, f]): Step => new Acquire(o, s, l, f)) },
  { weight: 5, arbitrary: fc.tuple(owner, side).map(([o, s]): Step => new Unlock(o, s)) },
  { weight: 2, arbitrary: owner.map((o): Step => new WaitingWriter(o)) },
  { weight: 2, arbitrary: fc.constant<Step>(new WaitOut()) },
  { weight: 1, arbitrary: fc.constant<Step>(new KeysLost()) },
);

const run: ModelRun<Model, Real> = {
  step,
  maxCommands: 20,
  runs: 40,
  timeMs: 15_000,
  seed: 280_203,
  async setup() {
    const clients = proxies.map((p) => createLockClient({ url: `redis://127.0.0.1:${p.port}` }));
    const name = uniqueName('model-rw');
    const locks = Array.from({ length: OWNERS }, (_, o) => clients[clientOf(o)]!.getReadWriteLock(name));
    await Promise.all(clients.map((_, c) => locks[c]!.readLock().isLocked()));
    const real: Real = {
      clients,
      proxies,
      runners: Array.from({ length: OWNERS }, () => contextRunner()),
      locks,
      async check(m) {
        const before = performance.now();
        const counts = await liveHolds(leasesKey(real));
        const ttls = [await harness.redis.pTTL(locks[0]!.key), await harness.redis.pTTL(leasesKey(real))];
        const after = performance.now();
        // Both keys live as long as the longest live hold (a hold's lease never shortened by another's).
        const longest = Math.max(0, ...m.holds.flatMap((h) => [...h.read, ...h.write]).filter((h) => live(h, after)).map((h) => Math.min(h.from, after + LONG_MS) - after));
        if (longest > 0) expect({ ttls: ttls.map((t) => t === -1 || t >= longest - 5) }).toEqual({ ttls: [true, true] });
        const writers = [...counts.keys()].filter((f) => f.endsWith(':write')).map((f) => f.slice(0, -':write'.length));
        const readers = [...counts.keys()].filter((f) => !f.endsWith(':write'));
        expect({ writers, readers: readers.filter((f) => writers.length > 0 && !writers.includes(f)), writersBeside: writers.length > 1 }).toEqual({ writers, readers: [], writersBeside: false });
        for (const [o, id] of m.ids) {
          for (const s of ['read', 'write'] as const) {
            const holds = m.holds[o]![s];
            const inRedis = counts.get(fieldOf(id, s)) ?? 0;
            const sure = holds.filter((h) => live(h, after)).length;
            const may = holds.filter((h) => maybe(h, before)).length;
            expect({ owner: o, side: s, atLeast: inRedis >= sure, atMost: inRedis <= may }).toEqual({ owner: o, side: s, atLeast: true, atMost: true });
          }
        }
      },
    };
    return { model: { holds: Array.from({ length: OWNERS }, () => ({ read: [], write: [] })), ids: new Map() }, real };
  },
  async teardown(real) {
    for (const p of real.proxies) p.disarm();
    await Promise.all(real.clients.map((c) => c.shutdown()));
    await harness.redis.del([real.locks[0]!.key, leasesKey(real)]);
  },
};

describe('RReadWriteLock against its model', () => {
  it('never lets a writer in beside another owner\'s live read lease, nor a reader beside a live write lease, over random command sequences', async () => {
    await checkModel(run);
  }, modelTimeout(run));
});
