/**
 * Model-based property test of RFairLock (fast-check `asyncModelRun`, see test/support/model.ts): random
 * sequences of commands over six owners (lock contexts) on three lock clients, each client talking to a
 * real Redis through its own TCP proxy, on one fair lock.
 *
 * The invariant a user relies on: one holder at a time, and the lock goes to live waiters first come,
 * first served (never to a newcomer, never to a waiter behind another live one). The model is the holder
 * with its hold count and the queue of waiters in arrival order (live ones, and dead ones: entries of a
 * process that stopped refreshing its deadline). After every step Redis must agree: the lock hash holds
 * exactly the model's holder and count, and the queue (`LRANGE`) is the model's, in order. When the holder
 * releases, the first live waiter must get the lock (behind a dead one: once the dead one's deadline,
 * `fairLockWaitTimeout`, has passed) and no other waiter may.
 *
 * Commands: an attempt without a wait (`tryLock`: granted only when the lock is free and nobody waits),
 * reentry, a waiter joining the queue, unlock (the head takes over), a waiter aborted, a waiter whose wait
 * time runs out, a dead waiter (an entry whose process stopped refreshing it), and the queue entries lost
 * (a restart: the live waiters rejoin on their next attempt).
 *
 * Bounded for `npm test` (seeded, `RELOCK_MODEL_RUNS` runs, default 80, time limit 15 s); `npm run soak`
 * runs it longer. `RELOCK_MODEL_SEED` replays a seed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createLockClient, type LockClient, type LockHandle, type RFairLock } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { atMost, contextRunner, serverTime, uniqueName, waitUntil } from '../support/helpers.js';
import { checkModel, modelTimeout, ModelStep, type ModelRun } from '../support/model.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';

const CLIENTS = 3;
const OWNERS = 6;
const clientOf = (owner: number): number => owner % CLIENTS;
/** `fairLockWaitTimeout`: how long a dead waiter holds the queue up. */
const QUEUE_TIMEOUT_MS = 400;
/** How late the head may get the lock after a release (or after a dead waiter before it timed out). */
const HANDOVER_BOUND_MS = 1000;
const WAIT_MS = 30_000;

interface Waiter {
  owner: number;
  /** The grant (or the failure) of its `acquire()`, and whether it settled. */
  done: Promise<LockHandle | Error>;
  settled: boolean;
  abort: AbortController;
}
interface Model {
  holder?: { owner: number; count: number };
  /**
   * Waiters in arrival order; a dead one is its owner id with the window (local time) in which its entry's
   * deadline passes: until `from` it is in the queue, after `by` the next script removes it.
   */
  queue: Array<Waiter | { dead: string; from: number; by: number }>;
}

interface Real {
  clients: LockClient[];
  proxies: TcpProxy[];
  runners: Array<<T>(fn: () => T) => T>;
  locks: RFairLock[];
  /** Owner → its owner id in Redis. */
  ids: string[];
  check(m: Model): Promise<void>;
}

const isLive = (w: Model['queue'][number]): w is Waiter => 'owner' in w;
const waiting = (m: Readonly<Model>, owner: number): boolean => m.queue.some((w) => isLive(w) && w.owner === owner);

const harness = useRedis();
let proxies: TcpProxy[] = [];
beforeAll(async () => {
  proxies = await Promise.all(Array.from({ length: CLIENTS }, () => startProxy('127.0.0.1', harness.server.port)));
});
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
});

abstract class Step extends ModelStep<Model, Real> {}

/** One attempt without a wait: granted when the lock is free (or the owner's) and nobody waits. */
class TryLock extends Step {
  constructor(readonly owner: number) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    return !waiting(m, this.owner);
  }
  async apply(m: Model, r: Real): Promise<void> {
    const mine = m.holder?.owner === this.owner;
    const now = performance.now();
    // Granted when free and nobody waits; dead entries whose deadline may have passed may or may not count.
    const free = !m.holder && m.queue.every((w) => !isLive(w) && now > w.by);
    const taken = m.holder !== undefined || m.queue.some((w) => isLive(w) || now < w.from);
    const result = await r.runners[this.owner]!(() => r.locks[this.owner]!.acquire({ waitMs: 0 })).catch((e: Error) => e);
    if (mine || free) expect(result).not.toBeInstanceOf(Error);
    else if (taken) expect((result as Error).name).toBe('LockAcquireTimeoutError');
    if (!(result instanceof Error)) {
      // Granted to a newcomer only once the dead entries before it were gone; reentry leaves the queue as it is.
      if (!mine) m.queue = m.queue.filter(isLive);
      m.holder = { owner: this.owner, count: (m.holder?.count ?? 0) + 1 };
    }
  }
  toString(): string {
    return `tryLock(owner ${this.owner})`;
  }
}

/** A waiter joins the queue (the lock is held, or others wait). */
class Wait extends Step {
  constructor(readonly owner: number, readonly waitMs = WAIT_MS) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    return m.holder !== undefined && m.holder.owner !== this.owner && !waiting(m, this.owner);
  }
  async apply(m: Model, r: Real): Promise<void> {
    const abort = new AbortController();
    const queueKey = r.locks[0]!.queueKey;
    const before = await harness.redis.lLen(queueKey);
    const waiter: Waiter = { owner: this.owner, abort, settled: false, done: undefined as never };
    waiter.done = r.runners[this.owner]!(() => r.locks[this.owner]!.acquire({ waitMs: this.waitMs, signal: abort.signal })).then(
      (h) => h,
      (e: Error) => e,
    );
    void waiter.done.finally(() => (waiter.settled = true));
    m.queue.push(waiter);
    await waitUntil(async () => (await harness.redis.lLen(queueKey)) > before || waiter.settled, 3000, 5, 'the waiter in the queue');
    expect(waiter.settled).toBe(false);
  }
  toString(): string {
    return `wait(owner ${this.owner}${this.waitMs === WAIT_MS ? '' : `, ${this.waitMs} ms`})`;
  }
}

/** The holder unlocks; when that releases the lock, the first live waiter gets it, and nobody else. */
class Unlock extends Step {
  override check(m: Readonly<Model>): boolean {
    return m.holder !== undefined;
  }
  async apply(m: Model, r: Real): Promise<void> {
    const holder = m.holder!;
    await r.runners[holder.owner]!(() => r.locks[holder.owner]!.unlock());
    if (--holder.count > 0) return;
    m.holder = undefined;
    const now = performance.now();
    const next = m.queue.findIndex(isLive);
    if (next < 0 && m.queue.every((w) => !isLive(w) && now > w.from)) return;
    // The owner that released it tries again at once: refused, as others wait (no barging).
    const barge = await r.runners[holder.owner]!(() => r.locks[holder.owner]!.acquire({ waitMs: 0 })).catch((e: Error) => e);
    expect({ barged: !(barge instanceof Error) }).toEqual({ barged: false });
    if (next < 0) return;
    const head = m.queue[next] as Waiter;
    const deadBy = Math.max(0, ...m.queue.slice(0, next).map((w) => (isLive(w) ? 0 : w.by)));
    const result = await atMost(head.done, Math.max(0, deadBy - performance.now()) + HANDOVER_BOUND_MS, 'late' as const);
    expect(result).not.toBeInstanceOf(Error);
    expect({ head: head.owner, granted: result !== 'late' }).toEqual({ head: head.owner, granted: true });
    m.queue.splice(0, next + 1);
    m.holder = { owner: head.owner, count: 1 };
    expect(m.queue.filter((w) => isLive(w) && w.settled).map((w) => (w as Waiter).owner)).toEqual([]);
  }
  toString(): string {
    return 'unlock()';
  }
}

/** A waiter is aborted: it leaves the queue at once. */
class Abort extends Step {
  constructor(readonly index: number) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    return m.queue.some(isLive);
  }
  async apply(m: Model, r: Real): Promise<void> {
    const live = m.queue.filter(isLive);
    const waiter = live[this.index % live.length]!;
    const reason = new Error('model abort');
    waiter.abort.abort(reason);
    expect(await waiter.done).toBe(reason);
    // Its leave may still be on its way when the abort rejects (it waits for attempts in flight, at most
    // LEAVE_WAIT_MS, then goes on in the background): the entry must be gone within a bound.
    await waitUntil(async () => !(await harness.redis.lRange(r.locks[0]!.queueKey, 0, -1)).includes(r.ids[waiter.owner]!), 2000, 5, 'the aborted waiter out of the queue');
    m.queue.splice(m.queue.indexOf(waiter), 1);
  }
  toString(): string {
    return `abort(waiter #${this.index})`;
  }
}

/** A waiter whose wait time runs out while the lock stays held: it fails and leaves the queue. */
class WaitTimesOut extends Step {
  constructor(readonly owner: number) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    return new Wait(this.owner).check(m);
  }
  async apply(m: Model, r: Real): Promise<void> {
    await new Wait(this.owner, 150).apply(m, r);
    const waiter = m.queue.at(-1) as Waiter;
    expect(((await waiter.done) as Error).name).toBe('LockAcquireTimeoutError');
    m.queue.pop();
  }
  toString(): string {
    return `waitTimesOut(owner ${this.owner})`;
  }
}

/** A waiter whose process died: its entry stays, with a deadline it no longer refreshes. */
class DeadWaiter extends Step {
  override check(m: Readonly<Model>): boolean {
    return m.holder !== undefined;
  }
  async apply(m: Model, r: Real): Promise<void> {
    const dead = uniqueName('dead');
    const lock = r.locks[0]!;
    const from = performance.now() + QUEUE_TIMEOUT_MS - 2;
    const deadline = (await serverTime(harness.redis)) + QUEUE_TIMEOUT_MS;
    await harness.redis.zAdd(lock.timeoutKey, { score: deadline, value: dead });
    await harness.redis.rPush(lock.queueKey, dead);
    m.queue.push({ dead, from, by: performance.now() + QUEUE_TIMEOUT_MS + 20 });
  }
  toString(): string {
    return 'deadWaiter()';
  }
}

const owner = fc.integer({ min: 0, max: OWNERS - 1 });
const step = fc.oneof(
  { weight: 5, arbitrary: owner.map((o): Step => new TryLock(o)) },
  { weight: 6, arbitrary: owner.map((o): Step => new Wait(o)) },
  { weight: 6, arbitrary: fc.constant<Step>(new Unlock()) },
  { weight: 2, arbitrary: fc.nat(5).map((i): Step => new Abort(i)) },
  { weight: 1, arbitrary: owner.map((o): Step => new WaitTimesOut(o)) },
  { weight: 3, arbitrary: fc.constant<Step>(new DeadWaiter()) },
);

const run: ModelRun<Model, Real> = {
  step,
  maxCommands: 25,
  runs: 80,
  timeMs: 15_000,
  seed: 280_204,
  async setup() {
    const clients = proxies.map((p) => createLockClient({ url: `redis://127.0.0.1:${p.port}`, fairLockWaitTimeout: QUEUE_TIMEOUT_MS }));
    const name = uniqueName('model-fair');
    const locks = Array.from({ length: OWNERS }, (_, o) => clients[clientOf(o)]!.getFairLock(name));
    const runners = Array.from({ length: OWNERS }, () => contextRunner());
    const ids: string[] = [];
    for (let o = 0; o < OWNERS; o++) {
      const handle = await runners[o]!(() => locks[o]!.acquire());
      ids.push(handle.owner);
      await handle.release();
    }
    const real: Real = {
      clients,
      proxies,
      runners,
      locks,
      ids,
      async check(m) {
        const { kind: _kind, ...holds } = await harness.redis.hGetAll(locks[0]!.key);
        expect(holds).toEqual(m.holder ? { [ids[m.holder.owner]!]: String(m.holder.count) } : {});
        const before = performance.now();
        // A dead entry may be gone once its deadline passed (the next script removes it): not compared then.
        const stale = new Set(m.queue.flatMap((w) => (!isLive(w) && before >= w.from ? [w.dead] : [])));
        const queue = (await harness.redis.lRange(locks[0]!.queueKey, 0, -1)).filter((id) => !stale.has(id));
        expect(queue).toEqual(m.queue.filter((w) => isLive(w) || !stale.has(w.dead)).map((w) => (isLive(w) ? ids[w.owner] : w.dead)));
      },
    };
    return { model: { queue: [] }, real };
  },
  async teardown(real) {
    // The waiters of the run are aborted before their clients close.
    await Promise.all(real.clients.map((c) => c.shutdown()));
    const lock = real.locks[0]!;
    await harness.redis.del([lock.key, lock.queueKey, lock.timeoutKey]);
  },
};

describe('RFairLock against its model', () => {
  it('has one holder and hands the lock to live waiters first come, first served, over random command sequences', async () => {
    await checkModel(run);
  }, modelTimeout(run));
});
