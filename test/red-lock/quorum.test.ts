import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { LockAcquireTimeoutError, LockLostError, runInContext, type LockClient, type RRedLock } from '../../src/index.js';
import { nodeTimeout } from '../../src/red-lock/red-lock.js';
import { closeAll, connect, lockClient, uniqueName, waitUntil, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';

/** Issue 20, defects 3, 4 and 5 (RedLock): four masters, each reachable directly and through a TCP proxy (to slow one down). */
let servers: RedisServer[];
let redis: Redis[];
let proxies: TcpProxy[];
let viaProxy: Redis[];
const paused = new Set<number>();
const killed = new Set<number>();
/** node-redis clients made by a test, closed after it. */
const extra: Redis[] = [];

beforeAll(async () => {
  servers = await Promise.all([0, 1, 2, 3].map(() => startRedis({ controllable: true })));
  redis = await Promise.all(servers.map((s) => connect(s.url)));
  proxies = await Promise.all(servers.map((s) => startProxy('127.0.0.1', s.port)));
  viaProxy = await Promise.all(proxies.map((p) => connect(`redis://127.0.0.1:${p.port}`)));
});
afterEach(async () => {
  for (const i of paused) servers[i]!.resume();
  paused.clear();
  for (const i of killed) await servers[i]!.restart();
  killed.clear();
  await Promise.all(extra.splice(0).map((r) => r.destroy()));
  for (const p of proxies) {
    p.latencyMs = 0;
    p.mode = 'pass';
  }
  await closeAll();
  await Promise.all(redis.map((r) => waitUntil(() => r.isReady, 5000, 10, 'the test connection to reconnect')));
});
afterAll(async () => {
  await Promise.all([...redis, ...viaProxy].map((r) => r.close()));
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all(servers.map((s) => s.stop()));
});

/** Lock clients on the first `n` masters; those in `slow` go through their proxy. */
function clients(n: number, slow: number[] = [], options: { lockWatchdogTimeout?: number } = {}): LockClient[] {
  return redis.slice(0, n).map((r, i) => lockClient(slow.includes(i) ? viaProxy[i]! : r, { responseTimeout: 2000, ...options }));
}
const redLockOf = (nodes: LockClient[], name: string): RRedLock => nodes[0]!.getRedLock(...nodes.map((c) => c.getLock(name)));

describe('RedLock: a quorum made impossible by busy nodes is "busy", not "Redis unavailable" (defect 3)', () => {
  it('2 masters, both busy, the second slower: tryLock resolves false, acquire throws LockAcquireTimeoutError', async () => {
    const name = uniqueName();
    expect(await redLockOf(clients(2), name).tryLock(0, 10, 's')).toBe(true);
    // The first node's busy answer makes a quorum (2 of 2) impossible while the second's is still in flight.
    proxies[1]!.latencyMs = 40;
    const other = redLockOf(clients(2, [1]), name);
    expect(await other.tryLock()).toBe(false);
    expect(await other.tryLock(-1, 5, 's')).toBe(false);
    expect(await other.tryLock(150, 5000, 'ms')).toBe(false);
    await expect(other.acquire({ waitMs: 100 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
  });

  it('4 masters, two busy, the other two slow: tryLock resolves false', async () => {
    const name = uniqueName();
    await Promise.all([0, 1].map((i) => clients(4)[i]!.getLock(name).lock(10, 's')));
    proxies[2]!.latencyMs = 40;
    proxies[3]!.latencyMs = 40;
    expect(await redLockOf(clients(4, [2, 3]), name).tryLock(100, 5000, 'ms')).toBe(false);
  });

  it('3 masters, one down (failing at once) and the two others busy (the second slower): tryLock resolves false', async () => {
    const name = uniqueName();
    await Promise.all([0, 1].map((i) => clients(3)[i]!.getLock(name).lock(10, 's')));
    proxies[1]!.latencyMs = 40;
    // The third master's client fails every command at once while its server is down (no offline queue, no retries).
    const down = await connect(servers[2]!.url, { disableOfflineQueue: true });
    extra.push(down);
    const nodes = [...clients(2, [1]), lockClient(down, { retry: { retries: 0 } })];
    await servers[2]!.kill();
    killed.add(2);
    await waitUntil(() => !down.isReady, 5000, 10, 'the client to see its server down');
    expect(await redLockOf(nodes, name).tryLock(-1, 5, 's')).toBe(false);
    expect(await redLockOf(nodes, name).tryLock(100, 5000, 'ms')).toBe(false);
  });

  it('3 masters, one paused and the two others busy: tryLock resolves false', async () => {
    const name = uniqueName();
    await Promise.all([0, 1].map((i) => clients(3)[i]!.getLock(name).lock(10, 's')));
    const nodes = clients(3);
    servers[2]!.pause();
    paused.add(2);
    expect(await redLockOf(nodes, name).tryLock(-1, 5, 's')).toBe(false);
  });
});

describe('RedLock: a straggler after a late quorum', () => {
  it('3 masters, two answering late in the round, the third silent: the third waits no longer than the node timeout, the two are held', async () => {
    const name = uniqueName();
    const lease = 6000;
    const timeout = nodeTimeout(lease); // 600 ms
    const latency = timeout / 3;
    const responseTimeout = 2000;
    // The third master on a connection of its own, destroyed after the test: its blackholed command never gets a reply.
    const silent = await connect(`redis://127.0.0.1:${proxies[2]!.port}`);
    extra.push(silent);
    const nodes = [...clients(2, [0, 1]), lockClient(silent, { responseTimeout })];
    const redLock = redLockOf(nodes, name);
    // Once without latency, so that every server knows the scripts: each attempt below is one round trip.
    expect(await redLock.tryLock(0, lease, 'ms')).toBe(true);
    await redLock.unlock();
    proxies[0]!.latencyMs = latency;
    proxies[1]!.latencyMs = latency;
    proxies[2]!.mode = 'blackhole';
    const started = performance.now();
    const handle = await redLock.acquire({ waitMs: 0, leaseMs: lease });
    const took = performance.now() - started;
    // The quorum grants at some e ≥ 2 × latency (the request and its reply each wait that long in the proxy):
    // 2/3 of the timeout. The third node's grace, as long again as e, is cut at the timeout: the round ends
    // then; uncut, it would end at 2e ≥ 4 × latency. Either way the attempt cut on the silent node then
    // waits the whole response timeout for a late grant to undo (issue 27; no reply comes): 4 × latency +
    // responseTimeout is the least an uncut round can take, and a third of the timeout later than a cut one
    // (less 10 ms: each of Node's timers on the way may fire up to 1 ms early).
    expect(took).toBeGreaterThanOrEqual(timeout - 1);
    expect(took).toBeLessThan(4 * latency + responseTimeout - 10);
    expect(handle.owner.split(',')).toHaveLength(2);
    expect(await Promise.all(redis.slice(0, 3).map((r) => r.exists(name)))).toEqual([1, 1, 0]);
    expect(handle.leaseTime!).toBeGreaterThanOrEqual(lease - (0.01 * lease + 2) - took - 1);
    proxies[0]!.latencyMs = 0;
    proxies[1]!.latencyMs = 0;
    await handle.release();
    expect(await Promise.all(redis.slice(0, 2).map((r) => r.exists(name)))).toEqual([0, 0]);
  });
});

describe('RedLock: after the quorum is lost, the surviving members are released (defect 4)', () => {
  it('two of three members found gone: the signal aborts and the third node is unlocked at once, not renewed', async () => {
    const nodes = clients(3, [], { lockWatchdogTimeout: 3000 });
    const name = uniqueName();
    const handle = await redLockOf(nodes, name).acquire();
    await waitUntil(async () => (await Promise.all(redis.slice(0, 3).map((r) => r.exists(name)))).every((n) => n === 1), 2000, 10, 'all three members');
    await redis[0]!.del(name);
    await redis[1]!.del(name);
    await waitUntil(() => handle.signal.aborted, 5000, 10, 'the loss of the quorum');
    expect(handle.signal.reason).toBeInstanceOf(LockLostError);
    // The survivor's watchdog lease is 3 s: a key gone within 1 s was released, not left to expire.
    await waitUntil(async () => (await redis[2]!.exists(name)) === 0, 1000, 10, 'the surviving member to be released');
    await handle.release();
  });
});

describe('RedLock.isHeldByCurrentContext (defect 5)', () => {
  it('true while the caller holds a quorum, false after unlock; a held minority is not held', () => runInContext(async () => {
    const nodes = clients(3);
    const name = uniqueName();
    const redLock = redLockOf(nodes, name);
    expect(await redLock.isHeldByCurrentContext()).toBe(false);
    await redLock.lock(10, 's');
    expect(await redLock.isHeldByCurrentContext()).toBe(true);
    await redis[0]!.del(name);
    expect(await redLock.isHeldByCurrentContext()).toBe(true);
    await redis[1]!.del(name);
    expect(await redLock.isHeldByCurrentContext()).toBe(false);
    await redLock.unlock();
    expect(await redLock.isHeldByCurrentContext()).toBe(false);
  }));
});
