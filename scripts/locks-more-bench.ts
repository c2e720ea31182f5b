/**
 * Figures for the spin lock, multi-lock and RedLock (docs/locks-more.md), on local redis-servers started
 * by the test harness: `npm run bench:locks-more`. Numbers depend on the machine; run it on a quiet one.
 *  1. hand-off latency: holder unlocks → waiter acquired, RLock (pub/sub) vs SpinLock (backoff);
 *  2. Redis commands per acquisition with 8 contending clients;
 *  3. multi-lock: two callers taking overlapping sets in opposite order;
 *  4. RedLock acquisition time with three masters, one dead, one paused.
 */
import { createClient } from 'redis';
import { createLockClient, type LockClient, type RLock } from '../src/index.js';
import { startRedis, type RedisServer } from '../test/support/redis.js';

type Redis = ReturnType<typeof createClient>;
const servers: RedisServer[] = [];
const connections: Redis[] = [];
const clients: LockClient[] = [];
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const now = (): number => performance.now();

async function server(): Promise<RedisServer> {
  const s = await startRedis({ controllable: true });
  servers.push(s);
  return s;
}
async function connection(url: string): Promise<Redis> {
  const c = createClient({ url });
  c.on('error', () => {});
  await c.connect();
  connections.push(c as Redis);
  return c as Redis;
}
function client(redis: Redis, responseTimeout = 3000): LockClient {
  const c = createLockClient({ redis, responseTimeout });
  clients.push(c);
  return c;
}
async function calls(redis: Redis, command: string): Promise<number> {
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await redis.info('commandstats'));
  return match ? Number(match[1]) : 0;
}
function stats(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return `median ${at(0.5).toFixed(1)} ms, p90 ${at(0.9).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms (n=${values.length})`;
}

async function handOff(url: string): Promise<void> {
  const holder = client(await connection(url));
  const waiter = client(await connection(url));
  for (const holdMs of [20, 300]) {
    for (const kind of ['RLock', 'SpinLock'] as const) {
      const get = (c: LockClient, name: string): RLock => (kind === 'RLock' ? c.getLock(name) : c.getSpinLock(name));
      const latencies: number[] = [];
      for (let i = 0; i < 30; i++) {
        const name = `handoff:${kind}:${holdMs}:${i}`;
        const h = get(holder, name);
        await h.lock();
        let acquiredAt = 0;
        const w = get(waiter, name);
        const waiting = w.tryLock(10, 'seconds').then(() => (acquiredAt = now()));
        await sleep(holdMs);
        await h.unlock();
        const unlockedAt = now();
        await waiting;
        latencies.push(acquiredAt - unlockedAt);
        await w.unlock();
      }
      console.log(`hand-off after a ${holdMs} ms hold, ${kind.padEnd(8)}: ${stats(latencies)}`);
    }
  }
}

async function contention(url: string): Promise<void> {
  const admin = await connection(url);
  const lockers = await Promise.all(Array.from({ length: 8 }, async () => client(await connection(url))));
  for (const [holdMs, perClient] of [[2, 25], [50, 5]] as const) {
    for (const kind of ['RLock', 'SpinLock'] as const) {
      await contend(admin, lockers, kind, holdMs, perClient);
    }
  }
}

async function contend(admin: Redis, lockers: LockClient[], kind: 'RLock' | 'SpinLock', holdMs: number, perClient: number): Promise<void> {
  const name = `contention:${kind}:${holdMs}`;
  const before = { evalsha: await calls(admin, 'evalsha'), publish: await calls(admin, 'publish'), subscribe: await calls(admin, 'subscribe') };
  const started = now();
  await Promise.all(
    lockers.map(async (c) => {
      const lock = kind === 'RLock' ? c.getLock(name) : c.getSpinLock(name);
      for (let i = 0; i < perClient; i++) {
        await lock.lock(10, 'seconds');
        await sleep(holdMs);
        await lock.unlock();
      }
    }),
  );
  const ms = now() - started;
  const n = lockers.length * perClient;
  const d = { evalsha: (await calls(admin, 'evalsha')) - before.evalsha, publish: (await calls(admin, 'publish')) - before.publish, subscribe: (await calls(admin, 'subscribe')) - before.subscribe };
  console.log(
    `8 clients × ${perClient} acquisitions (${holdMs} ms holds), ${kind.padEnd(8)}: ${Math.round(ms)} ms, ${(d.evalsha / n).toFixed(2)} scripts/acquisition ` +
      `(acquire attempts + unlock), ${(d.publish / n).toFixed(2)} publish, ${(d.subscribe / n).toFixed(2)} subscribe per acquisition`,
  );
}

async function oppositeOrder(urlA: string, urlB: string): Promise<void> {
  const [a1, b1, a2, b2] = [client(await connection(urlA)), client(await connection(urlB)), client(await connection(urlA)), client(await connection(urlB))];
  const admin = [await connection(urlA), await connection(urlB)];
  for (const lease of [undefined, 5000]) {
    const before = (await calls(admin[0], 'evalsha')) + (await calls(admin[1], 'evalsha'));
    const rounds = 200;
    const run = async (order: number[], onA: LockClient, onB: LockClient): Promise<number> => {
      const multi = onA.getMultiLock(...order.map((i) => (i % 2 === 0 ? onA : onB).getLock(`opposite:${lease}:${i}`)));
      const started = now();
      for (let i = 0; i < rounds; i++) {
        if (lease === undefined) await multi.lock();
        else await multi.lock(lease, 'ms');
        await new Promise((resolve) => setImmediate(resolve));
        await multi.unlock();
      }
      return now() - started;
    };
    const [x, y] = await Promise.all([run([0, 1, 2, 3], a1, b1), run([3, 2, 1, 0], a2, b2)]);
    const scripts = (await calls(admin[0], 'evalsha')) + (await calls(admin[1], 'evalsha')) - before;
    console.log(
      `multi-lock, 4 members on 2 servers, opposite order, ${rounds} acquisitions each, ${lease === undefined ? 'watchdog' : `lease ${lease} ms`}: ` +
        `${Math.round(x)} / ${Math.round(y)} ms, ${(scripts / (2 * rounds)).toFixed(1)} scripts per acquisition (minimum ${lease === undefined ? 8 : 12})`,
    );
  }
}

async function redLock(): Promise<void> {
  const nodes = await Promise.all([server(), server(), server()]);
  const locks = await Promise.all(nodes.map(async (s) => client(await connection(s.url), 500)));
  const measure = async (label: string): Promise<void> => {
    const times: number[] = [];
    const validities: number[] = [];
    for (let i = 0; i < 30; i++) {
      const rl = locks[0].getRedLock(...locks.map((c) => c.getLock(`red:${label}:${i}`)));
      const started = now();
      const handle = await rl.acquire({ waitMs: 2000, leaseMs: 5000 });
      times.push(now() - started);
      validities.push(handle.leaseTime!);
      await handle.release();
    }
    console.log(`RedLock, 3 masters, ${label.padEnd(28)}: acquire ${stats(times)}; validity median ${validities.sort((a, b) => a - b)[15]} ms of 5000`);
  };
  await measure('all up');
  nodes[2].pause();
  await measure('one paused (SIGSTOP)');
  nodes[2].resume();
  await nodes[2].kill();
  await measure('one killed');
}

try {
  const main = await server();
  const second = await server();
  await handOff(main.url);
  await contention(main.url);
  await oppositeOrder(main.url, second.url);
  await redLock();
} finally {
  await Promise.all(clients.map((c) => c.shutdown()));
  for (const c of connections) c.destroy();
  for (const s of servers) {
    s.resume();
    await s.stop();
  }
}
