/**
 * The ioredis traits relock deals with explicitly (src/redis/clients/ioredis.ts): `keyPrefix` (applied
 * once), `enableAutoPipelining` (relock's commands join the client's pipelines), `shutdown()` leaving the
 * user's client open, a subscription made during ioredis's handshake, and a `Redis` with `sentinels`
 * across a failover; on ioredis 5 and on ioredis 6 (the devDependency `ioredis-v6`), the newest major
 * in relock's peer range.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis as Redis5, type RedisOptions } from 'ioredis';
import { Redis as Redis6 } from 'ioredis-v6';
import { createLockClient, type LockClient } from '../../src/index.js';
import { ioredis as ioredisAdapter, ioredisUrlConnection } from '../../src/redis/clients/ioredis.js';
import type { Connection } from '../../src/redis/connection.js';
import { useRedis } from '../support/harness.js';
import { freePort } from '../support/redis.js';
import { callsSince, commandCalls, uniqueName, waitUntil } from '../support/helpers.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';
import { recordAcquisitions } from '../support/wakes.js';
import { MASTER_NAME, startSentinel, type SentinelSetup } from '../support/sentinel.js';
import { startProxy } from '../support/tcp-proxy.js';

const env = useRedis();
const opened: Array<{ quit(): Promise<unknown>; disconnect(): void }> = [];
const clients: LockClient[] = [];
const connections: Connection[] = [];
let sentinel: SentinelSetup | undefined;

/** The majors the traits are checked on (ioredis 6 through the ioredis 5 types: the API relock uses is the same). */
const MAJORS = [
  { major: 5, Redis: Redis5 },
  { major: 6, Redis: Redis6 as unknown as typeof Redis5 },
];
type Redis = Redis5;

/** A connected ioredis client of `Redis`'s major on the file's Redis, closed after the test. */
async function connectWith(Redis: typeof Redis5, options: RedisOptions = {}, url = env.server.url): Promise<Redis> {
  const client = new Redis(url, options);
  client.on('error', () => {});
  opened.push(client);
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client;
}
const lockClientOn = (redis: object, options: { lockWatchdogTimeout?: number } = {}): LockClient => {
  const client = createLockClient({ redis, ...options });
  clients.push(client);
  return client;
};

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.shutdown()));
  await Promise.all(connections.splice(0).map((c) => c.close()));
  await Promise.all(opened.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
  await sentinel?.stop();
  sentinel = undefined;
});

describe.each(MAJORS)('ioredis $major traits', ({ Redis }) => {
  const ioredis = (options?: RedisOptions, url?: string): Promise<Redis> => connectWith(Redis, options, url);

  it('keyPrefix: relock applies it once, to keys and channels; the user\'s own commands keep it', async () => {
    // Re-sending off, so that only the prefix decides that relock sends on a duplicate.
    const io = await ioredis({ keyPrefix: 'app:', autoResendUnfulfilledCommands: false });
    const client = lockClientOn(io);
    const waiter = lockClientOn(io);
    // A waiter is woken by the unlock message on the (once-)prefixed channel (`wokenBy: 'message'`, recorded),
    // within ms, against a bound of 500 ms: a round that failed while this process's loop or Redis stalled
    // past 300 ms (stallTolerant with probeReplies) is repeated, up to 3 rounds, on a fresh name, its hold
    // released; a message on another channel leaves the waiter to its 10 s lease, every round.
    await stallTolerant(async (_, slowReply) => {
      const name = uniqueName();
      const lock = client.getLock(name);
      expect(lock.key.startsWith('app:')).toBe(true);
      const handle = await lock.acquire({ leaseTime: 10, unit: 'seconds' });
      const acquisitions = recordAcquisitions();
      let waiting: Promise<boolean> | undefined;
      let stop = (): void => {};
      try {
        expect(await env.redis.exists(lock.key)).toBe(1);
        expect(await env.redis.exists(`app:${lock.key}`)).toBe(0);
        const base = await commandCalls(env.redis, 'evalsha');
        waiting = waiter.getLock(name).tryLock(10, 10, 'seconds');
        await waitUntil(async () => Number(((await env.redis.sendCommand(['PUBSUB', 'NUMSUB', lock.channel])) as unknown[])[1]) === 1, 5000, 5, 'the waiter to subscribe');
        // Subscribed is not yet parked: its attempt after subscribing is the second (one EVALSHA each). A
        // release while that attempt is in flight is seen as a missed message and retried at once, which
        // `wokenBy` reports as 'timer' (3 of 3 runs of the file beside two busy loops, before this wait).
        await callsSince(env.redis, 'evalsha', base, 2);
        stop = probeReplies(env.redis, slowReply);
        const start = performance.now();
        await handle.release();
        expect(await waiting).toBe(true);
        const took = performance.now() - start;
        stop();
        expect({ tookMs: took < 500 ? '< 500' : Math.round(took), calls: acquisitions.of(name) }).toEqual({ tookMs: '< 500', calls: [{ outcome: 'acquired', wokenBy: 'message' }] });
      } finally {
        stop();
        acquisitions.stop();
        await handle.release().catch(() => {});
        if (await (waiting ?? Promise.resolve(false)).catch(() => false)) await waiter.getLock(name).forceUnlock();
      }
    }, 300);
    await io.set('mine', '1');
    expect(await env.redis.get('app:mine')).toBe('1');
  });

  it('enableAutoPipelining: concurrent locks all succeed, sent in fewer pipelines than commands', async () => {
    // Re-sending off: relock sends on this very client (else on a duplicate of it, which inherits the option).
    const io = await ioredis({ enableAutoPipelining: true, autoResendUnfulfilledCommands: false });
    let pipelines = 0;
    const pipeline = io.pipeline.bind(io);
    io.pipeline = ((...args: Parameters<typeof io.pipeline>) => (pipelines++, pipeline(...args))) as typeof io.pipeline;
    const client = lockClientOn(io);
    const locks = Array.from({ length: 200 }, () => client.getLock(uniqueName()));
    expect(await Promise.all(locks.map((l) => l.tryLock(0, 10, 'seconds')))).toEqual(locks.map(() => true));
    await Promise.all(locks.map((l) => l.unlock()));
    expect(pipelines).toBeGreaterThan(0);
    expect(pipelines).toBeLessThan(200);
    for (const lock of locks) expect(await env.redis.exists(lock.key)).toBe(0);
  });

  it('a reply lost with its connection: the retry follows the close at once, not responseTimeout (3 s) later', async () => {
    const proxy = await startProxy(env.server.host, env.server.port);
    try {
      // Re-sending off: relock sends on this client, whose dropped in-flight commands ioredis never settles.
      const io = await ioredis({ autoResendUnfulfilledCommands: false }, `redis://127.0.0.1:${proxy.port}`);
      const lock = lockClientOn(io).getLock(uniqueName());
      const lost = proxy.loseReply({ match: (request) => request.includes(lock.key) && request.includes('EVAL') });
      const start = performance.now();
      // A wait time: with none, an ambiguous first attempt is reported rather than retried.
      expect(await lock.tryLock(5, 10, 'seconds')).toBe(true);
      await lost;
      expect(performance.now() - start).toBeLessThan(1500);
      expect(await lock.getHoldCount()).toBe(1);
      await lock.unlock();
    } finally {
      await Promise.all(clients.splice(0).map((c) => c.shutdown()));
      await proxy.close();
    }
  });

  it('the connection relock opens for a `url` (offline queue off): commands sent before it is ready wait for its first connect, and are answered', async () => {
    const key = uniqueName();
    await env.redis.set(key, 'value');
    // The client relock makes inside, to send more at its 'connect' (TCP up, ready check not done yet).
    let made: Redis | undefined;
    const Seen = class extends Redis {
      constructor(...args: ConstructorParameters<typeof Redis5>) {
        super(...args);
        made = this as unknown as Redis;
      }
    };
    const errors: unknown[] = [];
    const connection = ioredisUrlConnection(Seen as never, env.server.url, (error) => void errors.push(error));
    connections.push(connection);
    // Each reply, or the error it failed with (shown by the comparison below).
    const outcome = (reply: Promise<unknown>): Promise<unknown> => reply.catch((error: unknown) => error);
    const statuses = [made!.status];
    const atOnce = [connection.send(key, ['GET', key]), connection.sendKeyless(key, ['PING']), connection.send(key, ['EXISTS', key])].map(outcome);
    const atConnect = await new Promise<Promise<unknown>[]>((resolve) =>
      made!.once('connect', () => {
        statuses.push(made!.status);
        resolve([connection.send(key, ['GET', key]), connection.send(key, ['STRLEN', key])].map(outcome));
      }),
    );
    expect(statuses).toEqual(['connecting', 'connect']);
    expect(await Promise.all([...atOnce, ...atConnect])).toEqual(['value', 'PONG', 1, 'value', 5]);
    expect(made!.status).toBe('ready');
    expect(errors).toEqual([]);
  });

  it("the connection relock opens for a `url` hands its errors to relock's sink as source 'command' (Redis unreachable; without a listener ioredis would only print them)", async () => {
    const seen: Array<[unknown, string]> = [];
    const connection = ioredisUrlConnection(Redis as never, `redis://127.0.0.1:${await freePort()}`, (error, source) => void seen.push([error, source]));
    connections.push(connection);
    connection.send('k', ['GET', 'k']).catch(() => undefined); // its outcome is not the subject: the error event is
    await waitUntil(() => seen.length > 0, 2000, 5, "the connection's ECONNREFUSED in relock's sink");
    expect(seen[0]).toEqual([expect.objectContaining({ code: 'ECONNREFUSED' }), 'command']);
  });

  it('a channel subscribed while relock\'s subscriber is in its handshake stays subscribed (issue 11: fair-lock waiters left unwoken)', async () => {
    // ioredis writes SUBSCRIBE to the socket during its handshake (status `connect`), before its ready
    // check; the check's INFO is then refused in subscriber mode, and ioredis drops the connection and
    // re-subscribes nothing of it, although the SUBSCRIBE was answered. relock waits for `ready` instead.
    const io = await ioredis();
    const connection = ioredisAdapter.open(io, () => {});
    connections.push(connection);
    let subscriber: Redis | undefined;
    const duplicate = io.duplicate.bind(io);
    io.duplicate = ((...args: Parameters<typeof io.duplicate>) => (subscriber = duplicate(...args))) as typeof io.duplicate;
    const received = new Set<string>();
    const listener = (_message: string, channel: string): void => void received.add(channel);
    const [early, during] = [`${uniqueName()}:early`, `${uniqueName()}:handshake`];
    // The first subscription creates relock's subscriber, which starts connecting; the second is made
    // the moment its TCP connection is up (ioredis's 'connect' event, before the ready check).
    const first = connection.subscribe(early, listener);
    const second = await new Promise<Promise<void>>((resolve) => subscriber!.once('connect', () => resolve(connection.subscribe(during, listener))));
    await Promise.all([first, second]);
    await waitUntil(async () => {
      await Promise.all([early, during].map((channel) => env.redis.publish(channel, '1')));
      return received.size === 2;
    }, 3000, 20, 'a message on each channel');
    expect(subscriber!.status).toBe('ready');
  });

  it("relock's subscriber re-subscribes after its connection drops, whatever the user's client says (autoResubscribe, offline queue and resending off)", async () => {
    // relock's subscriber is a duplicate of the user's client with options of its own: ioredis's
    // re-subscription after a reconnect is what keeps a parked waiter's channel subscribed.
    const io = await ioredis({ autoResubscribe: false, enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
    const connection = ioredisAdapter.open(io, () => {});
    connections.push(connection);
    const channel = `${uniqueName()}:released`;
    const received: string[] = [];
    await connection.subscribe(channel, (message) => void received.push(message));
    const subscribed = async (): Promise<boolean> => Number(((await env.redis.sendCommand(['PUBSUB', 'NUMSUB', channel])) as unknown[])[1]) === 1;
    expect(await subscribed()).toBe(true);
    expect(Number(await env.redis.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub']))).toBe(1);
    await waitUntil(subscribed, 5000, 10, 'the channel to be subscribed again after the reconnect');
    await waitUntil(async () => (await env.redis.publish(channel, 'x')) === 1 && received.length > 0, 3000, 20, 'a message after the reconnect');
  });

  it('shutdown() leaves the user\'s client open and closes relock\'s connections (its duplicate for commands, its subscriber)', async () => {
    const connections = async (): Promise<number> => String(await env.redis.sendCommand(['CLIENT', 'LIST'])).trim().split('\n').length;
    const before = await connections();
    const io = await ioredis();
    const client = lockClientOn(io);
    const name = uniqueName();
    const lock = client.getLock(name);
    const held = await lock.acquire({ leaseTime: 10, unit: 'seconds' });
    const waiting = lockClientOn(io).getLock(name).tryLock(10, 10, 'seconds');
    await waitUntil(async () => Number(((await env.redis.sendCommand(['PUBSUB', 'NUMSUB', lock.channel])) as unknown[])[1]) === 1, 5000, 5, 'the waiter to subscribe');
    await held.release();
    expect(await waiting).toBe(true);
    await Promise.all(clients.splice(0).map((c) => c.shutdown()));
    expect(io.status).toBe('ready');
    expect(await io.ping()).toBe('PONG');
    await waitUntil(async () => (await connections()) === before + 1, 2000, 10, "only the user's connection to be left");
    const clientList = String(await env.redis.sendCommand(['CLIENT', 'LIST']));
    expect(clientList.split('\n').filter((line) => / sub=[1-9]/.test(line))).toEqual([]);
  });

  it('a Redis with `sentinels`: a lock held through a failover stays held, is renewed on the new primary, and its waiter gets it after release', async () => {
    sentinel = await startSentinel();
    const io = new Redis({ sentinels: [{ host: '127.0.0.1', port: sentinel.sentinelPort }], name: MASTER_NAME, maxRetriesPerRequest: 3 });
    io.on('error', () => {});
    opened.push(io);
    const client = lockClientOn(io, { lockWatchdogTimeout: 4000 });
    const name = uniqueName();
    const handle = await client.getLock(name).acquire();
    const waiting = lockClientOn(io).getLock(name).tryLock(60, 'seconds');
    waiting.catch(() => {});
    await sentinel.failover();
    const renewals = client.stats().renewalCalls;
    await waitUntil(() => client.stats().renewalCalls >= renewals + 2, 8000, 20, 'renewals after the failover');
    expect(handle.signal.aborted).toBe(false);
    expect(await client.getLock(name).isLocked()).toBe(true);
    await handle.release();
    expect(await waiting).toBe(true);
  }, 60_000);
});
