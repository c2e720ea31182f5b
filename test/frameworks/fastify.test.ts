/**
 * relock/fastify in real Fastify apps on loopback: two instances (two apps, two LockClients, two Redis
 * connections) against one Redis, driven by 40 requests, 8 at a time, over 3 keys, on node-redis and
 * ioredis.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { relockPlugin, withLock } from '../../src/fastify/index.js';
import { ClientClosedError, createLockClient, InvalidArgumentError, type LockClient } from '../../src/index.js';
import { connect, keys, uniqueName, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { drive, FAMILIES, post, WorkTracker } from './support.js';

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = await connect(server.url);
});

afterAll(async () => {
  await redis?.close();
  await server?.stop();
});

type KeyRequest = FastifyRequest<{ Params: { key: string } }>;

async function app(options: Parameters<typeof relockPlugin>[1], tracker = new WorkTracker(), untracked = new WorkTracker()): Promise<{ app: FastifyInstance; base: string }> {
  const a = Fastify();
  await a.register(relockPlugin, options);
  a.post(
    '/locked/:key',
    withLock('work:{{params.key}}', async (req: KeyRequest) => {
      await tracker.run(req.params.key);
      return { ok: true };
    }),
  );
  a.post('/unlocked/:key', async (req: KeyRequest) => {
    await untracked.run(req.params.key);
    return { ok: true };
  });
  a.post('/reenter/:key', async (req: KeyRequest) => {
    const lock = req.server.locks.getLock(`plain:${req.params.key}`);
    await lock.lock();
    await lock.lock(); // the request's context holds it: a reentry
    const holds = await lock.getHoldCount();
    await lock.unlock();
    await lock.unlock();
    return { holds };
  });
  a.post('/fenced/:key', withLock((req: KeyRequest) => `fenced:${req.params.key}`, (_req, _reply, held) => ({ token: String(held.token), kind: held.kind }), { kind: 'fenced' }));
  a.post('/busy/:key', withLock('busy:{{params.key}}', () => ({ ok: true }), { waitMs: 0 }));
  a.post('/bad/:key', withLock('bad:{{params.nope}}', () => ({ ok: true })));
  a.setErrorHandler((error: Error, _req, reply) => reply.code(500).send({ error: error.name, message: error.message }));
  return { app: a, base: await a.listen({ port: 0, host: '127.0.0.1' }) };
}

describe.each(FAMILIES)('relock/fastify on $name', (family) => {
  let opened: Array<{ client: object; close(): Promise<unknown> }>;
  beforeAll(async () => {
    opened = await Promise.all([family.open(server.url), family.open(server.url)]);
  });
  afterAll(async () => {
    await Promise.all(opened.map((o) => o.close()));
  });

  it('two instances: no duplicate work with withLock, duplicates without it; then app.close() shuts both clients down and leaves no key', async () => {
    const keyPrefix = `${uniqueName('fastify')}:`;
    const tracker = new WorkTracker();
    const without = new WorkTracker();
    const apps = await Promise.all(opened.map((o) => app({ redis: o.client, keyPrefix }, tracker, without)));
    expect(await drive(apps.map((a) => a.base), (key) => `/locked/${key}`)).toEqual(Array(40).fill(200));
    expect({ runs: tracker.runs, duplicates: tracker.duplicates }).toEqual({ runs: 40, duplicates: 0 });
    expect(await drive(apps.map((a) => a.base), (key) => `/unlocked/${key}`)).toEqual(Array(40).fill(200));
    expect(without.duplicates).toBeGreaterThan(0);

    const clients = apps.map((a) => a.app.locks);
    await Promise.all(apps.map((a) => a.app.close()));
    for (const client of clients) {
      expect(client.stats()).toMatchObject({ watchdogHolds: 0, subscriptions: 0, lingeringSubscriptions: 0 });
      await expect(client.getLock('after').lock()).rejects.toBeInstanceOf(ClientClosedError);
    }
    expect(await keys(redis, `${keyPrefix}*`)).toEqual([]);
  }, 60_000);

  it('the request context: lock() twice in one handler reenters; with requestContext false the second is refused', async () => {
    const keyPrefix = `${uniqueName('fastify-ctx')}:`;
    const on = await app({ redis: opened[0]!.client, keyPrefix });
    const off = await app({ redis: opened[0]!.client, keyPrefix, requestContext: false });
    expect(await post(`${on.base}/reenter/a`)).toEqual({ status: 200, body: { holds: 2 } });
    expect(await post(`${off.base}/reenter/a`)).toMatchObject({ status: 500, body: { error: 'ReentryNeedsContextError' } });
    await Promise.all([on.app.close(), off.app.close()]);
  });

  it('kind fenced hands the fencing token to the handler; waitMs 0 on a busy lock answers 409; a template value missing is an InvalidArgumentError', async () => {
    const keyPrefix = `${uniqueName('fastify-kinds')}:`;
    const one = await app({ redis: opened[0]!.client, keyPrefix });
    const first = await post(`${one.base}/fenced/x`);
    const second = await post(`${one.base}/fenced/x`);
    expect(first).toEqual({ status: 200, body: { token: expect.any(String), kind: 'fenced' } });
    expect(BigInt((second.body as { token: string }).token)).toBe(BigInt((first.body as { token: string }).token) + 1n);
    const handle = await one.app.locks.getLock('busy:y').acquire();
    expect(await post(`${one.base}/busy/y`)).toEqual({ status: 409, body: { error: 'LOCK_ACQUIRE_TIMEOUT', lock: 'busy:y', waitTimeMs: 0 } });
    await handle.release();
    expect(await post(`${one.base}/busy/y`)).toEqual({ status: 200, body: { ok: true } });
    expect(await post(`${one.base}/bad/z`)).toEqual({ status: 500, body: { error: 'InvalidArgumentError', message: expect.stringContaining('{{params.nope}}') } });
    await one.app.close();
  });
});

it('a given client: shut down by app.close() unless shutdownOnClose is false; bad options refused at registration or declaration', async () => {
  const keyPrefix = `${uniqueName('fastify-given')}:`;
  const kept: LockClient = createLockClient({ redis, keyPrefix });
  const shut: LockClient = createLockClient({ redis, keyPrefix });
  const a = await app({ client: kept, shutdownOnClose: false });
  const b = await app({ client: shut });
  expect(a.app.locks).toBe(kept);
  await Promise.all([a.app.close(), b.app.close()]);
  await expect(shut.getLock('x').lock()).rejects.toBeInstanceOf(ClientClosedError);
  const handle = await kept.getLock('x').acquire();
  await handle.release();
  await kept.shutdown();
  await expect(Fastify().register(relockPlugin, { client: kept, url: 'redis://x' } as never).ready()).rejects.toThrow(/either `client`/);
  await expect(Fastify().register(relockPlugin, { redis, lockWatchdogTimeout: -1 }).ready()).rejects.toBeInstanceOf(InvalidArgumentError);
  expect(() => withLock('', () => 1)).toThrow(InvalidArgumentError);
  expect(() => withLock('a', () => 1, { kind: 'mutex' as 'lock' })).toThrow(/kind/);
});
