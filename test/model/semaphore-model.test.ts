/**
 * Model-based property test of RSemaphore (fast-check `asyncModelRun`, see test/support/model.ts): random
 * sequences of commands over two lock clients, each talking to a real Redis through its own TCP proxy.
 *
 * The invariant a user relies on: never more permits inside than were set, and permits released come
 * back. The model is the number of permits set (`trySetPermits`, moved by `addPermits` and
 * `drainPermits`) and the acquisitions held; after every step the free count in Redis (`GET`, and
 * `availablePermits()`) must be the permits set minus those held, an acquisition must be granted exactly
 * when that many were free, and a waiter must get permits released by another client (woken by the
 * release message: the fallback timer, `lockWatchdogTimeout`, is longer than the bound it is given).
 *
 * Fault steps: the reply of an acquire or a release lost (the retry must not take or give the permits
 * twice: request latch), the first attempt refused before it ran (connection reset; the retry must take
 * them once).
 *
 * Bounded for `npm test` (seeded, `RELOCK_MODEL_RUNS` runs, default 40, time limit 15 s); `npm run soak`
 * runs it longer. `RELOCK_MODEL_SEED` replays a seed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createLockClient, PermitAcquireTimeoutError, type LockClient, type RSemaphore } from '../../src/index.js';
import { ACQUIRE, ADD } from '../../src/semaphore/scripts.js';
import { useRedis } from '../support/harness.js';
import { sleep, subscribers, uniqueName } from '../support/helpers.js';
import { checkModel, modelTimeout, ModelStep, type ModelRun } from '../support/model.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';

const CLIENTS = 2;
const INITIAL = 3;
/** How long a waiter may take to get permits released by another client (its fallback timer is 30 s). */
const WAKE_BOUND_MS = 1500;
/** The wait time of a waiter and of a faulted acquire (it retries within it). */
const WAIT_MS = 10_000;

interface Model {
  /** The permits set (the count when nothing is held). */
  total: number;
  /** The permits of each acquisition held, oldest first. */
  holds: number[];
}
const free = (m: Readonly<Model>): number => m.total - m.holds.reduce((a, b) => a + b, 0);

interface Real {
  clients: LockClient[];
  proxies: TcpProxy[];
  semaphores: RSemaphore[];
  key: string;
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

type Fault = 'none' | 'reply lost' | 'refused';

/** Arms `fault` on `proxy` for the next request of `sha` (a lost reply only when it starts with `granted`). */
function arm(proxy: TcpProxy, fault: Fault, sha: string, granted?: string): void {
  if (fault === 'reply lost') void proxy.loseReply({ match: sha, ...(granted ? { replyPrefix: granted } : {}) });
  if (fault === 'refused') void proxy.refuseRequest(sha);
}

abstract class Step extends ModelStep<Model, Real> {}

class Acquire extends Step {
  constructor(readonly client: number, readonly permits: number, readonly waitMs: number, readonly fault: Fault) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    // A faulted attempt is retried within the wait time only: it gets one, and is drawn only when it is granted.
    return this.fault === 'none' || free(m) >= this.permits;
  }
  async apply(m: Model, r: Real): Promise<void> {
    const proxy = r.proxies[this.client]!;
    arm(proxy, this.fault, ACQUIRE.sha, ':1\r\n');
    try {
      const waitMs = this.fault === 'none' ? this.waitMs : WAIT_MS;
      const result = await r.semaphores[this.client]!.acquire({ permits: this.permits, waitMs }).catch((e: Error) => e);
      if (free(m) >= this.permits) {
        expect(result).toBeUndefined();
        m.holds.push(this.permits);
      } else {
        expect(result).toBeInstanceOf(PermitAcquireTimeoutError);
      }
    } finally {
      proxy.disarm();
    }
  }
  toString(): string {
    return `acquire(client ${this.client}, ${this.permits} permits, wait ${this.waitMs}${this.fault === 'none' ? '' : `, ${this.fault}`})`;
  }
}

class Release extends Step {
  constructor(readonly client: number, readonly index: number, readonly fault: Fault) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    return m.holds.length > 0;
  }
  async apply(m: Model, r: Real): Promise<void> {
    const [permits] = m.holds.splice(this.index % m.holds.length, 1);
    const proxy = r.proxies[this.client]!;
    arm(proxy, this.fault, ADD.sha);
    try {
      await r.semaphores[this.client]!.release(permits);
    } finally {
      proxy.disarm();
    }
  }
  toString(): string {
    return `release(client ${this.client}, hold #${this.index}${this.fault === 'none' ? '' : `, ${this.fault}`})`;
  }
}

class AddPermits extends Step {
  constructor(readonly delta: number) {
    super();
  }
  async apply(m: Model, r: Real): Promise<void> {
    await r.semaphores[0]!.addPermits(this.delta);
    m.total += this.delta;
  }
  toString(): string {
    return `addPermits(${this.delta})`;
  }
}

/** `trySetPermits` on a semaphore that exists: refused, nothing changed. */
class TrySet extends Step {
  constructor(readonly permits: number) {
    super();
  }
  async apply(_m: Model, r: Real): Promise<void> {
    expect(await r.semaphores[1]!.trySetPermits(this.permits)).toBe(false);
  }
  toString(): string {
    return `trySetPermits(${this.permits})`;
  }
}

class Drain extends Step {
  async apply(m: Model, r: Real): Promise<void> {
    expect(await r.semaphores[0]!.drainPermits()).toBe(free(m));
    m.total -= free(m);
  }
  toString(): string {
    return 'drainPermits()';
  }
}

/** A waiter for more permits than are free; the other client releases holds until enough are: the waiter gets them. */
class WaitForRelease extends Step {
  constructor(readonly client: number, readonly permits: number) {
    super();
  }
  override check(m: Readonly<Model>): boolean {
    return free(m) >= 0 && free(m) < this.permits && free(m) + m.holds.reduce((a, b) => a + b, 0) >= this.permits;
  }
  async apply(m: Model, r: Real): Promise<void> {
    let granted = false;
    const waiting = r.semaphores[this.client]!.acquire({ permits: this.permits, waitMs: WAIT_MS }).then(() => (granted = true));
    // Waiting: subscribed to the channel, and the attempt made after subscribing answered.
    await subscribers(harness.redis, r.semaphores[0]!.channel);
    await sleep(30);
    expect(granted).toBe(false);
    const other = r.semaphores[1 - this.client]!;
    while (free(m) < this.permits) await other.release(m.holds.shift()!);
    const released = performance.now();
    await waiting;
    m.holds.push(this.permits);
    // Woken by the release message, not by the end of its wait time (a last attempt) or its fallback timer.
    expect(performance.now() - released).toBeLessThan(WAKE_BOUND_MS);
  }
  toString(): string {
    return `waitForRelease(client ${this.client}, ${this.permits} permits)`;
  }
}

const client = fc.integer({ min: 0, max: CLIENTS - 1 });
const fault = fc.constantFrom<Fault>('none', 'none', 'reply lost', 'refused');
const step = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(client, fc.integer({ min: 1, max: 3 }), fc.constantFrom(0, 0, 30), fault).map(([c, p, w, f]): Step => new Acquire(c, p, w, f)) },
  { weight: 6, arbitrary: fc.tuple(client, fc.nat(5), fault).map(([c, i, f]): Step => new Release(c, i, f)) },
  { weight: 2, arbitrary: fc.integer({ min: -2, max: 2 }).map((d): Step => new AddPermits(d)) },
  { weight: 1, arbitrary: fc.nat(5).map((p): Step => new TrySet(p)) },
  { weight: 1, arbitrary: fc.constant<Step>(new Drain()) },
  { weight: 4, arbitrary: fc.tuple(client, fc.integer({ min: 1, max: 3 })).map(([c, p]): Step => new WaitForRelease(c, p)) },
);

const run: ModelRun<Model, Real> = {
  step,
  maxCommands: 15,
  runs: 40,
  timeMs: 15_000,
  seed: 280_201,
  async setup() {
    const clients = proxies.map((p) => createLockClient({ url: `redis://127.0.0.1:${p.port}` }));
    const name = uniqueName('model-sem');
    const semaphores = clients.map((c) => c.getSemaphore(name));
    expect(await semaphores[0]!.trySetPermits(INITIAL)).toBe(true);
    await semaphores[1]!.availablePermits();
    const real: Real = {
      clients,
      proxies,
      semaphores,
      key: semaphores[0]!.key,
      async check(m) {
        expect(await harness.redis.get(real.key)).toBe(String(free(m)));
        expect(await semaphores[1]!.availablePermits()).toBe(free(m));
      },
    };
    return { model: { total: INITIAL, holds: [] }, real };
  },
  async teardown(real) {
    for (const p of real.proxies) p.disarm();
    await Promise.all(real.clients.map((c) => c.shutdown()));
    await harness.redis.del(real.key);
  },
};

describe('RSemaphore against its model', () => {
  it('never lets more permits in than were set, and gives released permits back, over random command sequences', async () => {
    await checkModel(run);
  }, modelTimeout(run));
});
