/**
 * Model-based property test of RCountDownLatch (fast-check `asyncModelRun`, see test/support/model.ts):
 * random sequences of commands over three lock clients, each talking to a real Redis through its own TCP
 * proxy, on one latch.
 *
 * The invariant a user relies on: every awaiter is released when the count reaches zero, and none before.
 * The model is the count and the awaiters started while it was above zero. After every step Redis must
 * agree (the latch hash's count, `getCount()`), no awaiter of a running count may have been released; when
 * a count-down reaches zero, every awaiter must be released within `WAKE_BOUND_MS` (woken by the zero
 * message; the fallback timer, `lockWatchdogTimeout`, is far longer).
 *
 * Commands: `trySetCount` (refused while a count runs), count-down, an awaiter (released at once when the
 * latch is open), an awaiter whose wait time runs out. Fault steps: the count-down's reply lost or its
 * first attempt refused before it ran (the retry must count down once: request latch), and the zero message
 * lost: the awaiters' client cut off while the count reaches zero, then reconnected (its awaiters must
 * check the count again once resubscribed).
 *
 * Bounded for `npm test` (seeded, `RELOCK_MODEL_RUNS` runs, default 40, time limit 15 s); `npm run soak`
 * runs it longer. `RELOCK_MODEL_SEED` replays a seed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createLockClient, type LockClient, type RCountDownLatch } from '../../src/index.js';
import { COUNT_DOWN } from '../../src/count-down-latch/scripts.js';
import { useRedis } from '../support/harness.js';
import { sleep, uniqueName } from '../support/helpers.js';
import { checkModel, modelTimeout, ModelStep, type ModelRun } from '../support/model.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';

const CLIENTS = 3;
/** How long awaiters may take to be released once the count reached zero. */
const WAKE_BOUND_MS = 1500;
const WAIT_MS = 20_000;

interface Awaiter {
  client: number;
  done: Promise<boolean | Error>;
  settled: boolean;
}
interface Model {
  count: number;
  awaiters: Awaiter[];
}

interface Real {
  clients: LockClient[];
  proxies: TcpProxy[];
  latches: RCountDownLatch[];
  check(m: Model): Promise<void>;
}

const harness = useRedis();
let proxies: TcpProxy[] = [];
beforeAll(async () => {
  proxies = await Promise.all(Array.from({ length: CLIENTS }, () => startProxy('127.0.0.1', harness.server.port)));
});
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
});

/** Every awaiter of the model is released (true) within the bound; the model then has none. */
async function allReleased(m: Model): Promise<void> {
  const bound = sleep(WAKE_BOUND_MS).then(() => 'late' as const);
  const results = await Promise.all(m.awaiters.map((a) => Promise.race([a.done, bound])));
  expect(results).toEqual(m.awaiters.map(() => true));
  m.awaiters = [];
}

type Fault = 'none' | 'reply lost' | 'refused';
abstract class Step extends ModelStep<Model, Real> {}

class TrySet extends Step {
  constructor(readonly client: number, readonly count: number) {
    super();
  }
  async apply(m: Model, r: Real): Promise<void> {
    expect(await r.latches[this.client]!.trySetCount(this.count)).toBe(m.count === 0);
    if (m.count === 0) m.count = this.count;
  }
  toString(): string {
    return `trySetCount(client ${this.client}, ${this.count})`;
  }
}

class CountDown extends Step {
  constructor(readonly client: number, readonly fault: Fault) {
    super();
  }
  async apply(m: Model, r: Real): Promise<void> {
    const proxy = r.proxies[this.client]!;
    if (this.fault === 'reply lost') void proxy.loseReply({ match: COUNT_DOWN.sha });
    if (this.fault === 'refused') void proxy.refuseRequest(COUNT_DOWN.sha);
    try {
      const left = await r.latches[this.client]!.countDown();
      expect(left).toBe(Math.max(0, m.count - 1));
    } finally {
      proxy.disarm();
    }
    if (m.count === 0) return;
    if (--m.count === 0) await allReleased(m);
  }
  toString(): string {
    return `countDown(client ${this.client}${this.fault === 'none' ? '' : `, ${this.fault}`})`;
  }
}

class Await extends Step {
  constructor(readonly client: number) {
    super();
  }
  async apply(m: Model, r: Real): Promise<void> {
    const awaiter: Awaiter = { client: this.client, settled: false, done: undefined as never };
    awaiter.done = r.latches[this.client]!.await(WAIT_MS, 'milliseconds').catch((e: Error) => e);
    void awaiter.done.finally(() => (awaiter.settled = true));
    if (m.count === 0) expect(await awaiter.done).toBe(true);
    else m.awaiters.push(awaiter);
  }
  toString(): string {
    return `await(client ${this.client})`;
  }
}

/** An awaiter with a short wait time while the count runs: false at its end. */
class AwaitTimesOut extends Step {
  constructor(readonly client: number) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    return m.count > 0;
  }
  async apply(_m: Model, r: Real): Promise<void> {
    expect(await r.latches[this.client]!.await(100, 'milliseconds')).toBe(false);
  }
  toString(): string {
    return `awaitTimesOut(client ${this.client})`;
  }
}

/** The zero message lost: the awaiters' client is cut off while another client counts down to zero, then reconnects. */
class ZeroWhileCut extends Step {
  constructor(readonly client: number) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    return m.count === 1 && m.awaiters.some((a) => a.client === this.client);
  }
  async apply(m: Model, r: Real): Promise<void> {
    const proxy = r.proxies[this.client]!;
    proxy.mode = 'blackhole';
    try {
      expect(await r.latches[(this.client + 1) % CLIENTS]!.countDown()).toBe(0);
      m.count = 0;
      await sleep(50);
    } finally {
      proxy.resetAll();
      proxy.mode = 'pass';
    }
    await allReleased(m);
  }
  toString(): string {
    return `zeroWhileCut(client ${this.client})`;
  }
}

const client = fc.integer({ min: 0, max: CLIENTS - 1 });
const step = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(client, fc.integer({ min: 1, max: 3 })).map(([c, n]): Step => new TrySet(c, n)) },
  { weight: 6, arbitrary: fc.tuple(client, fc.constantFrom<Fault>('none', 'none', 'reply lost', 'refused')).map(([c, f]): Step => new CountDown(c, f)) },
  { weight: 5, arbitrary: client.map((c): Step => new Await(c)) },
  { weight: 1, arbitrary: client.map((c): Step => new AwaitTimesOut(c)) },
  { weight: 3, arbitrary: client.map((c): Step => new ZeroWhileCut(c)) },
);

const run: ModelRun<Model, Real> = {
  step,
  maxCommands: 15,
  runs: 40,
  timeMs: 15_000,
  seed: 280_205,
  async setup() {
    const clients = proxies.map((p) => createLockClient({ url: `redis://127.0.0.1:${p.port}` }));
    const name = uniqueName('model-latch');
    const latches = clients.map((c) => c.getCountDownLatch(name));
    await Promise.all(latches.map((l) => l.getCount()));
    const real: Real = {
      clients,
      proxies,
      latches,
      async check(m) {
        const stored = await harness.redis.hGet(latches[0]!.key, 'count');
        expect(stored ?? '0').toBe(String(m.count));
        expect(await latches[1]!.getCount()).toBe(m.count);
        expect({ releasedEarly: m.awaiters.filter((a) => a.settled).length }).toEqual({ releasedEarly: 0 });
      },
    };
    return { model: { count: 0, awaiters: [] }, real };
  },
  async teardown(real) {
    for (const p of real.proxies) {
      p.disarm();
      p.mode = 'pass';
    }
    await Promise.all(real.clients.map((c) => c.shutdown()));
    await harness.redis.del(real.latches[0]!.key);
  },
};

describe('RCountDownLatch against its model', () => {
  it('releases every awaiter when the count reaches zero and none before, over random command sequences', async () => {
    await checkModel(run);
  }, modelTimeout(run));
});
