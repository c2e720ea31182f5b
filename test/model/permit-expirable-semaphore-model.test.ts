/**
 * Model-based property test of RPermitExpirableSemaphore (fast-check `asyncModelRun`, see
 * test/support/model.ts): random sequences of commands over two lock clients, each talking to a real Redis
 * through its own TCP proxy, on a semaphore of `LIMIT` permits.
 *
 * The invariant a user relies on: never more than `LIMIT` live permit ids (a member of the sorted set whose
 * expiry, in Redis server time, is still ahead), and every id handed out exists in Redis until its lease
 * ends, its holder releases it, or Redis loses it. The model is the handles held, each with the window
 * (local monotonic time) in which its lease ends: it starts one lease after the attempt was sent, and ends
 * one lease plus `SLACK_MS` after the reply came. After every step Redis is read (`ZRANGE … WITHSCORES`,
 * `TIME`): at most `LIMIT` live ids; each held permit whose window has not begun is live, each whose window
 * has passed is not; no live id the model does not know (nothing handed out twice or left behind). An
 * acquisition must be granted when the permits surely free suffice, and refused when those surely live
 * leave too few; in the window between, either is allowed.
 *
 * Commands: acquire (1 or 2 permits; a short lease, a long one, or the watchdog), release, a new lease
 * (`updateLeaseTime`: short to long and back), a waiter that a short lease's end lets in (reclaim), waiting
 * the short leases out. Fault steps: the acquire's reply lost (the retry must renew the first attempt's
 * ids, not take new ones), the acquire's first attempt refused before it ran (connection reset: the retry
 * must take the permits, not believe it already holds them), the release's reply lost, a permit's lease
 * ended at once (its score moved into the past: a clock jump), the sorted set lost (a restart).
 *
 * Bounded for `npm test` (seeded, `RELOCK_MODEL_RUNS` runs, default 40, time limit 15 s); `npm run soak`
 * runs it longer. `RELOCK_MODEL_SEED` replays a seed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createLockClient, PermitAcquireTimeoutError, PermitNotHeldError, type LockClient, type PermitHandle, type RPermitExpirableSemaphore } from '../../src/index.js';
import { ACQUIRE, RELEASE } from '../../src/permit-expirable-semaphore/scripts.js';
import { useRedis } from '../support/harness.js';
import { serverTime, sleep, uniqueName } from '../support/helpers.js';
import { checkModel, modelTimeout, ModelStep, type ModelRun } from '../support/model.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';

const CLIENTS = 2;
const LIMIT = 3;
const SHORT_MS = 250;
const LONG_MS = 60_000;
/** Room between the model's clock and Redis's (a reply's way back, the ms granularity of `TIME`). */
const SLACK_MS = 40;
/** How late a waiter may get a permit whose lease ended (it wakes at the nearest expiry Redis told it). */
const WAKE_BOUND_MS = 600;
/** The wait time of a waiter and of a faulted acquire (it retries within it). */
const WAIT_MS = 10_000;

type Lease = 'short' | 'long' | 'watchdog';
const leaseMs = (lease: Lease): number | undefined => (lease === 'short' ? SHORT_MS : lease === 'long' ? LONG_MS : undefined);

interface Held {
  handle: PermitHandle;
  /** Local time from which its lease may have ended, and by which it has. */
  from: number;
  by: number;
}
interface Model {
  held: Held[];
}

interface Real {
  clients: LockClient[];
  proxies: TcpProxy[];
  semaphores: RPermitExpirableSemaphore[];
  check(m: Model): Promise<void>;
}

const surelyLive = (h: Held, now = performance.now()): boolean => now < h.from;
const surelyEnded = (h: Held, now = performance.now()): boolean => now > h.by;
/** Permits that are surely live, and those that may be. */
const liveCounts = (m: Readonly<Model>): { sure: number; maybe: number } => {
  const now = performance.now();
  const sure = m.held.filter((h) => surelyLive(h, now)).reduce((n, h) => n + h.handle.ids.length, 0);
  const maybe = m.held.filter((h) => !surelyEnded(h, now)).reduce((n, h) => n + h.handle.ids.length, 0);
  return { sure, maybe };
};
/** The end window of a lease of `ms` given in an attempt sent at `sent` and answered at `answered`. */
const window = (ms: number | undefined, sent: number, answered: number): { from: number; by: number } =>
  ms === undefined ? { from: Infinity, by: Infinity } : { from: sent + ms - 2, by: answered + ms + SLACK_MS };

const harness = useRedis();
let proxies: TcpProxy[] = [];
beforeAll(async () => {
  proxies = await Promise.all(Array.from({ length: CLIENTS }, () => startProxy('127.0.0.1', harness.server.port)));
});
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
});

/** The live permit ids in Redis (expiry ahead of Redis's clock). */
async function liveIds(key: string): Promise<string[]> {
  const now = await serverTime(harness.redis);
  const members = await harness.redis.zRangeWithScores(key, 0, -1);
  return members.filter((e) => e.score > now).map((e) => e.value);
}

type Fault = 'none' | 'reply lost' | 'refused';

abstract class Step extends ModelStep<Model, Real> {}

class Acquire extends Step {
  constructor(readonly client: number, readonly permits: number, readonly lease: Lease, readonly fault: Fault) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    // A faulted attempt is retried within its wait time: drawn only when it is surely granted.
    return this.fault === 'none' || liveCounts(m).maybe + this.permits <= LIMIT;
  }
  async apply(m: Model, r: Real): Promise<void> {
    const proxy = r.proxies[this.client]!;
    if (this.fault === 'reply lost') void proxy.loseReply({ match: ACQUIRE.sha, replyPrefix: ':1\r\n' });
    if (this.fault === 'refused') void proxy.refuseRequest(ACQUIRE.sha);
    const { sure, maybe } = liveCounts(m);
    const ms = leaseMs(this.lease);
    const sent = performance.now();
    try {
      const options = { permits: this.permits, waitMs: this.fault === 'none' ? 0 : WAIT_MS, ...(ms === undefined ? {} : { leaseMs: ms }) };
      const result = await r.semaphores[this.client]!.acquire(options).catch((e: Error) => e);
      if (result instanceof Error) {
        expect(result).toBeInstanceOf(PermitAcquireTimeoutError);
        expect({ refusedWhileFree: maybe + this.permits <= LIMIT }).toEqual({ refusedWhileFree: false });
      } else {
        expect({ grantedWhileFull: sure + this.permits > LIMIT }).toEqual({ grantedWhileFull: false });
        expect(result.ids).toHaveLength(this.permits);
        m.held.push({ handle: result, ...window(ms, sent, performance.now()) });
      }
    } finally {
      proxy.disarm();
    }
  }
  toString(): string {
    return `acquire(client ${this.client}, ${this.permits} permits, ${this.lease}${this.fault === 'none' ? '' : `, ${this.fault}`})`;
  }
}

/** The end of a held permit's use: a release (reply lost or not), or a new lease. */
abstract class OnHeld extends Step {
  constructor(readonly index: number, readonly fault: boolean) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    return m.held.length > 0 && (!this.fault || surelyLive(m.held[this.index % m.held.length]!));
  }
  async apply(m: Model, r: Real): Promise<void> {
    const held = m.held[this.index % m.held.length]!;
    const [live, ended] = [surelyLive(held), surelyEnded(held)];
    const result = await this.act(held, r).then(() => undefined, (e: Error) => e);
    if (live) expect(result).toBeUndefined();
    if (ended) expect(result).toBeInstanceOf(PermitNotHeldError);
    if (result !== undefined) {
      expect(result).toBeInstanceOf(PermitNotHeldError);
      m.held.splice(m.held.indexOf(held), 1);
    } else {
      this.done(m, held);
    }
  }
  abstract act(held: Held, r: Real): Promise<void>;
  abstract done(m: Model, held: Held): void;
}

class Release extends OnHeld {
  async act(held: Held, r: Real): Promise<void> {
    // The handle's semaphore is on the client that acquired it; a lost reply is armed on both proxies.
    if (this.fault) for (const p of r.proxies) void p.loseReply({ match: RELEASE.sha });
    try {
      await held.handle.release();
    } finally {
      for (const p of r.proxies) p.disarm();
    }
  }
  done(m: Model, held: Held): void {
    m.held.splice(m.held.indexOf(held), 1);
  }
  toString(): string {
    return `release(#${this.index}${this.fault ? ', reply lost' : ''})`;
  }
}

class UpdateLease extends OnHeld {
  private sent = 0;
  constructor(index: number, readonly lease: 'short' | 'long') {
    super(index, false);
  }
  async act(held: Held): Promise<void> {
    this.sent = performance.now();
    await held.handle.updateLeaseTime(leaseMs(this.lease)!, 'milliseconds');
  }
  done(_m: Model, held: Held): void {
    Object.assign(held, window(leaseMs(this.lease), this.sent, performance.now()));
  }
  toString(): string {
    return `updateLeaseTime(#${this.index}, ${this.lease})`;
  }
}

/** Redis's clock passes a held permit's lease at once (its expiry moved into the past). */
class LeaseEnds extends Step {
  constructor(readonly index: number) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    return m.held.length > 0;
  }
  async apply(m: Model, r: Real): Promise<void> {
    const held = m.held[this.index % m.held.length]!;
    const key = r.semaphores[0]!.key;
    for (const id of held.handle.ids) await harness.redis.zAdd(key, { score: 1, value: id }, { XX: true });
    held.from = held.by = performance.now();
  }
  toString(): string {
    return `leaseEnds(#${this.index})`;
  }
}

/** Redis loses the permits (a restart without persistence); the limit stays. */
class PermitsLost extends Step {
  async apply(m: Model, r: Real): Promise<void> {
    await harness.redis.del(r.semaphores[0]!.key);
    for (const held of m.held) held.from = held.by = performance.now();
  }
  toString(): string {
    return 'permitsLost()';
  }
}

/** Waits out the short leases. */
class WaitOut extends Step {
  async apply(): Promise<void> {
    await sleep(SHORT_MS + SLACK_MS + 10);
  }
  toString(): string {
    return 'waitOut()';
  }
}

/** The semaphore is full and a short lease will end: a waiter gets a permit when it does (reclaim), woken at that expiry. */
class WaitForExpiry extends Step {
  constructor(readonly client: number) {
    super();
  }
  private ending(m: Readonly<Model>): Held[] {
    return m.held.filter((h) => h.by !== Infinity && !surelyEnded(h));
  }
  override check(m: Readonly<Model>): boolean {
    const { sure } = liveCounts(m);
    return sure === LIMIT && this.ending(m).length > 0;
  }
  async apply(m: Model, r: Real): Promise<void> {
    const by = Math.min(...this.ending(m).map((h) => h.by));
    const sent = performance.now();
    const handle = await r.semaphores[this.client]!.acquire({ waitMs: WAIT_MS, leaseMs: LONG_MS });
    expect(performance.now() - by).toBeLessThan(WAKE_BOUND_MS);
    m.held.push({ handle, ...window(LONG_MS, sent, performance.now()) });
  }
  toString(): string {
    return `waitForExpiry(client ${this.client})`;
  }
}

const client = fc.integer({ min: 0, max: CLIENTS - 1 });
const index = fc.nat(5);
const step = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(client, fc.constantFrom(1, 1, 2), fc.constantFrom<Lease>('short', 'long', 'watchdog'), fc.constantFrom<Fault>('none', 'none', 'reply lost', 'refused')).map(([c, p, l, f]): Step => new Acquire(c, p, l, f)) },
  { weight: 4, arbitrary: fc.tuple(index, fc.boolean()).map(([i, f]): Step => new Release(i, f)) },
  { weight: 3, arbitrary: fc.tuple(index, fc.constantFrom<'short' | 'long'>('short', 'long')).map(([i, l]): Step => new UpdateLease(i, l)) },
  { weight: 2, arbitrary: index.map((i): Step => new LeaseEnds(i)) },
  { weight: 1, arbitrary: fc.constant<Step>(new PermitsLost()) },
  { weight: 2, arbitrary: fc.constant<Step>(new WaitOut()) },
  { weight: 2, arbitrary: client.map((c): Step => new WaitForExpiry(c)) },
);

const run: ModelRun<Model, Real> = {
  step,
  maxCommands: 15,
  runs: 40,
  timeMs: 15_000,
  seed: 280_202,
  async setup() {
    const clients = proxies.map((p) => createLockClient({ url: `redis://127.0.0.1:${p.port}` }));
    const name = uniqueName('model-pes');
    const semaphores = clients.map((c) => c.getPermitExpirableSemaphore(name));
    expect(await semaphores[0]!.trySetPermits(LIMIT)).toBe(true);
    await semaphores[1]!.availablePermits();
    const real: Real = {
      clients,
      proxies,
      semaphores,
      async check(m) {
        const before = performance.now();
        const live = await liveIds(semaphores[0]!.key);
        const after = performance.now();
        expect(live.length).toBeLessThanOrEqual(LIMIT);
        const known = new Set(m.held.flatMap((h) => h.handle.ids));
        expect(live.filter((id) => !known.has(id))).toEqual([]);
        for (const held of m.held) {
          const state = surelyLive(held, after) ? 'live' : surelyEnded(held, before) ? 'ended' : undefined;
          if (state) expect({ ids: held.handle.ids, state: held.handle.ids.every((id) => live.includes(id)) ? 'live' : held.handle.ids.some((id) => live.includes(id)) ? 'partly' : 'ended' }).toEqual({ ids: held.handle.ids, state });
        }
      },
    };
    return { model: { held: [] }, real };
  },
  async teardown(real) {
    for (const p of real.proxies) p.disarm();
    await Promise.all(real.clients.map((c) => c.shutdown()));
    await harness.redis.del([real.semaphores[0]!.key, real.semaphores[0]!.permitsKey]);
  },
};

describe('RPermitExpirableSemaphore against its model', () => {
  it('never has more live permit ids than its limit, and every id handed out lives in Redis, over random command sequences', async () => {
    await checkModel(run);
  }, modelTimeout(run));
});
