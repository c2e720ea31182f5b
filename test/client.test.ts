import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis as IORedis } from 'ioredis';
import pino from 'pino';
import { createClient as createClientV5 } from 'redis-v5';
import { ClientClosedError, createLockClient, InvalidArgumentError, RedisUnavailableError, runInContext, type LockClient, type LockClientOptions } from '../src/index.js';
import { activeResources, activeTimers, connect, keys, numsub, sleep, uniqueName, waitUntil, type Redis } from './support/helpers.js';
import { freePort, startRedis, type RedisServer } from './support/redis.js';

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = await connect(server.url);
});
afterAll(async () => {
  await redis.close();
  await server.stop();
});

/**
 * Lock clients with connections of their own (`url`): shut down after each test even when it failed
 * half-way. A client left reconnecting to a server that is down keeps the jest worker alive ("A worker
 * process has failed to exit gracefully").
 */
const urlClients: LockClient[] = [];
function urlClient(options: LockClientOptions & { url: string }): LockClient {
  const client = createLockClient(options);
  urlClients.push(client);
  return client;
}
afterEach(async () => {
  await Promise.all(urlClients.splice(0).map((client) => client.shutdown()));
});

describe('createLockClient', () => {
  it('rejects a client object it does not recognise, or one that lacks methods, naming what was recognised and what is missing (known failure 23)', async () => {
    expect(() => createLockClient({ redis: {} })).toThrow(/not a Redis client relock recognises/);
    expect(() => createLockClient({ redis: { isReady: true } })).toThrow(/node-redis client.*lacks sendCommand, duplicate, connect, subscribe, unsubscribe, on/);
    expect(() => createLockClient({ redis: { sendCommand() {} } })).toThrow(InvalidArgumentError);
    expect(() => createLockClient({})).toThrow(/either `redis`.*or `url`/);
    expect(() => createLockClient({ url: server.url, redis })).toThrow(/not both/);
    expect(() => createLockClient({ redis: { call() {}, status: 'ready' } })).toThrow(/ioredis Redis.*lacks duplicate, on, off/);
    expect(() => createLockClient({ redis: { call() {}, status: 'ready', isCluster: true, duplicate() {} } })).toThrow(/ioredis Cluster.*lacks nodes, on, off/);
    // An ioredis client is recognised by shape and accepted (test/clients/ runs every suite on it).
    const ioredis = new IORedis({ lazyConnect: true });
    await createLockClient({ redis: ioredis }).shutdown();
    ioredis.disconnect();
  });

  it('accepts lockWatchdogTimeout from 100 ms, and warns once when it is below 3 × responseTimeout', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    await createLockClient({ redis, logger, lockWatchdogTimeout: 9000 }).shutdown();
    expect(lines).toEqual([]);
    await createLockClient({ redis, logger, lockWatchdogTimeout: 100, responseTimeout: 200 }).shutdown();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/lockWatchdogTimeout is below 3 × responseTimeout/);
  });

  it('rejects bad options with InvalidArgumentError naming the option', () => {
    expect(() => createLockClient({ redis, lockWatchdogTimeout: 0 })).toThrow(/lockWatchdogTimeout/);
    // Too short to renew (newcomer finding 7: 1 or 10 ms lost every hold at once): the bound is named.
    for (const tiny of [1, 10, 99]) {
      expect(() => createLockClient({ redis, lockWatchdogTimeout: tiny })).toThrow(new InvalidArgumentError('lockWatchdogTimeout', `must be at least 100 ms; got ${tiny}`));
    }
    expect(() => createLockClient({ redis, subscriptionTimeout: -1 })).toThrow(/subscriptionTimeout/);
    expect(() => createLockClient({ redis, retry: { retries: Number.NaN } })).toThrow(/retry.retries/);
    expect(() => createLockClient({ redis, keyPrefix: 'a}b' })).toThrow(/hash tag/);
    expect(() => createLockClient({ redis, keyPrefix: '{' })).toThrow(/keyPrefix.*"\{"/);
    // Values that reach Redis as integers (PEXPIRE, WAIT) must be whole numbers.
    expect(() => createLockClient({ redis, lockWatchdogTimeout: 1500.5 })).toThrow(/lockWatchdogTimeout.*whole number/);
    expect(() => createLockClient({ redis, syncReplicas: { timeout: 0.5 } })).toThrow(/syncReplicas.timeout/);
    expect(() => createLockClient({ redis, watchdogBatchSize: 0.5 })).toThrow(/watchdogBatchSize.*whole number of holds/);
    expect(() => createLockClient({ redis, logger: {} as never })).toThrow(/logger/);
    expect(() => createLockClient({ url: 'not a url' })).toThrow(InvalidArgumentError);
    expect(() => createLockClient({ url: 'http://localhost:6379' })).toThrow(/must start with redis:\/\//);
    expect(() => createLockClient({ url: 42 as never })).toThrow(/url.*string/);
  });

  it('refuses retry.randomize that is not a boolean, naming it and saying it must be a boolean, before opening anything', async () => {
    // Sockets and timers of this process by kind (others may close meanwhile; none may open).
    const opened = () => activeResources('TCPSocketWrap', 'TCPConnectWrap', 'Timeout');
    const connections = (await redis.clientList()).length;
    const before = opened();
    let error: unknown;
    try {
      urlClient({ url: server.url, retry: { randomize: 'yes' as never } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect([(error as InvalidArgumentError).argument, (error as Error).message]).toEqual(['retry.randomize', 'invalid retry.randomize: must be a boolean']);
    // No connection, socket or timer was opened for the refused client.
    expect(urlClients).toEqual([]);
    const after = opened();
    for (const kind of Object.keys(before) as Array<keyof typeof before>) expect([kind, after[kind] <= before[kind]]).toEqual([kind, true]);
    expect((await redis.clientList()).length).toBeLessThanOrEqual(connections);
  });

  it('after shutdown(): no leftover keys, subscriptions or timers, and the user\'s client stays open', async () => {
    const timers = activeTimers();
    const prefix = `${uniqueName('hyg')}:`;
    const client = createLockClient({ redis, keyPrefix: prefix, lockWatchdogTimeout: 600 });
    const names = Array.from({ length: 5 }, () => uniqueName());
    for (const name of names) {
      await runInContext(async () => {
        const lock = client.getLock(name);
        await lock.lock();
        await lock.tryLock(0, 5, 's');
        await lock.unlock();
        await lock.unlock();
      });
    }
    const held = client.getLock(uniqueName());
    await held.lock();
    const waiting = client.getLock(held.name).tryLock(30, 'seconds');
    await waitUntil(async () => (await numsub(redis, held.channel)) === 1, 2000, 2, 'the waiter to subscribe');
    const outcome = waiting.catch((e: unknown) => e);
    await client.shutdown();
    await outcome;
    await held.forceUnlock().catch(() => {});
    await redis.del(held.key);
    expect(await numsub(redis, held.channel)).toBe(0);
    expect(await keys(redis, `${prefix}*`)).toEqual([]);
    await waitUntil(() => activeTimers() <= timers, 1000, 10, 'timers to be cleared');
    expect(redis.isOpen).toBe(true);
    expect(await redis.ping()).toBe('PONG');
  });

  it('with `url`, creates its own connections and closes them on shutdown', async () => {
    const client = urlClient({ url: server.url });
    const lock = client.getLock(uniqueName());
    expect(await lock.tryLock(1, 5, 'seconds')).toBe(true);
    const waiting = client.getLock(lock.name).tryLock(2, 'seconds');
    await sleep(20);
    await lock.unlock();
    expect(await waiting).toBe(true);
    await client.getLock(lock.name).forceUnlock();
    const clientsBefore = (await redis.clientList()).length;
    await client.shutdown();
    await waitUntil(async () => (await redis.clientList()).length <= clientsBefore - 2, 2000, 10, 'the connections to close');
  });

  it('with `url`, a waiter whose first answer comes back while shutdown() runs opens no subscriber connection that outlives it', async () => {
    const holder = urlClient({ url: server.url });
    const name = uniqueName();
    await holder.getLock(name).lock();
    const connected = async (): Promise<number> => (await redis.clientList()).length;
    const base = await connected();
    // The shutdown comes 0 to 8 event-loop turns after the waiter's call: some turn lands between the
    // first answer and the subscription (before the fix, 3 of 6 such turns left a subscriber connected).
    for (let turns = 0; turns <= 8; turns++) {
      const client = createLockClient({ url: server.url });
      await client.getLock(uniqueName()).tryLock(0, 1, 'seconds');
      const waiting = client.getLock(name).tryLock(5, 5, 'seconds').catch((e: unknown) => e);
      for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
      await client.shutdown();
      expect(await waiting).toBeInstanceOf(ClientClosedError);
      await waitUntil(async () => (await connected()) === base, 2000, 10, `the connections of the client shut down ${turns} turns after the call to close`);
    }
    await holder.getLock(name).forceUnlock();
  });

  it('with `url` to a server that is down, a call fails with RedisUnavailableError within the retry policy', async () => {
    const port = await freePort();
    // With `url` relock imports the client library on first use, inside the first call's response timeout:
    // a cold import can take longer than this test's 200 ms. Load it first, as any earlier client would have.
    await import('redis');
    // A refused connection answers in well under a millisecond; a response timeout of 200 ms was once
    // outrun by a stalled loop in a whole-suite run (the cause was then the timeout, not ECONNREFUSED).
    const client = urlClient({ url: `redis://127.0.0.1:${port}`, responseTimeout: 1000, retry: { retries: 2, minTimeout: 20, maxTimeout: 50 } });
    const started = performance.now();
    const error = await client.getLock(uniqueName()).tryLock().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as Error).cause).toBeInstanceOf(Error); // known failure 4: each class carries its cause
    expect((error as Error).cause).toMatchObject({ code: 'ECONNREFUSED' }); // the connection's error, not a timeout
    expect(performance.now() - started).toBeLessThan(2000);
    await client.shutdown();
  });

  it('works with a node-redis v5 client (RESP2)', async () => {
    const v5 = createClientV5({ url: server.url });
    v5.on('error', () => {});
    await v5.connect();
    const client = createLockClient({ redis: v5, lockWatchdogTimeout: 600 });
    const name = uniqueName();
    const lock = client.getLock(name);
    await lock.lock();
    expect(await lock.getHoldCount()).toBe(1);
    const waiting = client.getLock(name).tryLock(3, 'seconds');
    await sleep(900);
    expect(await lock.isHeldByCurrentContext()).toBe(true);
    await lock.unlock();
    expect(await waiting).toBe(true);
    await client.getLock(name).forceUnlock();
    await client.shutdown();
    await v5.close();
  });

  it('uses the keyPrefix of the user\'s node-redis client by default', async () => {
    const prefixed = await connect(server.url, { keyPrefix: 'app:' } as Parameters<typeof connect>[1]);
    const client = createLockClient({ redis: prefixed });
    const lock = client.getLock(uniqueName());
    await lock.lock();
    expect(await redis.exists(`app:${lock.name}`)).toBe(1);
    await lock.unlock();
    await client.shutdown();
    await prefixed.close();
  });
});
