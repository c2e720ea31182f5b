/**
 * relock/express in real Express apps on loopback: two instances (two apps, two LockClients, two Redis
 * connections) against one Redis, driven by 40 requests, 8 at a time, over 3 keys, on node-redis and
 * ioredis.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { attachLocks, lockConflictHandler, lockContext, locksOf, shutdownOnClose, withLock } from '../../src/express/index.js';
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

interface Instance {
  base: string;
  client: LockClient;
  http: Server;
  closed: Promise<void>;
}

function app(client: LockClient, tracker: WorkTracker, context = true): express.Express {
  const a = express();
  attachLocks(a, client);
  if (context) a.use(lockContext());
  a.post(
    '/locked/:key',
    withLock('work:{{params.key}}', async (req: express.Request<{ key: string }>, res: express.Response) => {
      await tracker.run(req.params.key);
      res.json({ ok: true });
    }),
  );
  a.post('/unlocked/:key', async (req, res) => {
    await tracker.run(req.params.key);
    res.json({ ok: true });
  });
  a.post('/reenter/:key', async (req, res) => {
    const lock = locksOf(req).getLock(`plain:${req.params.key}`);
    await lock.lock();
    await lock.lock(); // the request's context holds it: a reentry
    const holds = await lock.getHoldCount();
    await lock.unlock();
    await lock.unlock();
    res.json({ holds });
  });
  a.post('/fenced/:key', withLock((req: express.Request) => `fenced:${String(req.params.key)}`, (_req, res: express.Response, held) => void res.json({ token: String(held.token), kind: held.kind }), { kind: 'fenced' }));
  a.post('/busy/:key', withLock('busy:{{params.key}}', (_req, res: express.Response) => void res.json({ ok: true }), { waitMs: 0 }));
  a.use(lockConflictHandler());
  a.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => void res.status(500).json({ error: error.name }));
  return a;
}

async function instances(redisClients: object[], tracker: WorkTracker, keyPrefix: string, context = true): Promise<Instance[]> {
  return Promise.all(
    redisClients.map(async (r) => {
      const client = createLockClient({ redis: r, keyPrefix });
      const http = app(client, tracker, context).listen(0, '127.0.0.1');
      await new Promise((resolve) => http.once('listening', resolve));
      return { base: `http://127.0.0.1:${(http.address() as AddressInfo).port}`, client, http, closed: shutdownOnClose(http, client) };
    }),
  );
}

async function stop(list: Instance[]): Promise<void> {
  for (const i of list) i.http.close();
  await Promise.all(list.map((i) => i.closed));
}

describe.each(FAMILIES)('relock/express on $name', (family) => {
  let opened: Array<{ client: object; close(): Promise<unknown> }>;
  beforeAll(async () => {
    opened = await Promise.all([family.open(server.url), family.open(server.url)]);
  });
  afterAll(async () => {
    await Promise.all(opened.map((o) => o.close()));
  });

  it('two instances: no duplicate work with withLock, duplicates without it; then the close shuts both clients down and leaves no key', async () => {
    const prefix = `${uniqueName('express')}:`;
    const tracker = new WorkTracker();
    const apps = await instances(opened.map((o) => o.client), tracker, prefix);
    const bases = apps.map((i) => i.base);
    expect(await drive(bases, (key) => `/locked/${key}`)).toEqual(Array(40).fill(200));
    expect({ runs: tracker.runs, duplicates: tracker.duplicates }).toEqual({ runs: 40, duplicates: 0 });
    const without = new WorkTracker();
    const bare = await instances(opened.map((o) => o.client), without, prefix);
    expect(await drive(bare.map((i) => i.base), (key) => `/unlocked/${key}`)).toEqual(Array(40).fill(200));
    expect(without.duplicates).toBeGreaterThan(0);

    await stop([...apps, ...bare]);
    for (const i of apps) {
      expect(i.client.stats()).toMatchObject({ watchdogHolds: 0, subscriptions: 0, lingeringSubscriptions: 0 });
      await expect(i.client.getLock('after').lock()).rejects.toBeInstanceOf(ClientClosedError);
    }
    expect(await keys(redis, `${prefix}*`)).toEqual([]);
  }, 60_000);

  it('lockContext: lock() twice in one request reenters; without the middleware the second is refused', async () => {
    const prefix = `${uniqueName('express-ctx')}:`;
    const [withContext] = await instances([opened[0]!.client], new WorkTracker(), prefix);
    const [withoutContext] = await instances([opened[0]!.client], new WorkTracker(), prefix, false);
    expect(await post(`${withContext!.base}/reenter/a`)).toEqual({ status: 200, body: { holds: 2 } });
    expect(await post(`${withoutContext!.base}/reenter/a`)).toEqual({ status: 500, body: { error: 'ReentryNeedsContextError' } });
    await stop([withContext!, withoutContext!]);
  });

  it('kind fenced: the handler gets increasing fencing tokens; a busy lock with waitMs 0 answers 409', async () => {
    const prefix = `${uniqueName('express-kinds')}:`;
    const [one] = await instances([opened[0]!.client], new WorkTracker(), prefix);
    const first = await post(`${one!.base}/fenced/x`);
    const second = await post(`${one!.base}/fenced/x`);
    expect(first).toEqual({ status: 200, body: { token: expect.any(String), kind: 'fenced' } });
    expect(BigInt((second.body as { token: string }).token)).toBe(BigInt((first.body as { token: string }).token) + 1n);
    const holder = one!.client.getLock('busy:y');
    const handle = await holder.acquire();
    expect(await post(`${one!.base}/busy/y`)).toEqual({ status: 409, body: { error: 'LOCK_ACQUIRE_TIMEOUT', lock: 'busy:y', waitTimeMs: 0 } });
    await handle.release();
    expect(await post(`${one!.base}/busy/y`)).toEqual({ status: 200, body: { ok: true } });
    await stop([one!]);
  });
});

it('refuses a bad name, option or app at declaration, and a template value that is missing per request', async () => {
  expect(() => withLock('', () => {})).toThrow(InvalidArgumentError);
  expect(() => withLock('a', () => {}, { kind: 'mutex' as 'lock' })).toThrow(/kind/);
  expect(() => withLock('a', () => {}, { wait: 1 } as object)).toThrow(/wait/);
  expect(() => withLock('a', 'not a handler' as never)).toThrow(expect.objectContaining({ name: 'InvalidArgumentError', argument: 'handler' }));
  expect(() => attachLocks({} as express.Express, {} as LockClient)).toThrow(InvalidArgumentError);
  expect(() => locksOf({ app: { locals: {} } })).toThrow(/attachLocks/);
  const a = express();
  attachLocks(a, createLockClient({ redis, keyPrefix: `${uniqueName('express-bad')}:` }));
  a.post('/x/:id', withLock('x:{{params.nope}}', (_req, res: express.Response) => void res.json({})));
  a.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => void res.status(500).json({ error: error.message }));
  const http = a.listen(0, '127.0.0.1');
  await new Promise((resolve) => http.once('listening', resolve));
  const closed = shutdownOnClose(http, a.locals.locks as LockClient);
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  expect(await post(`${base}/x/1`)).toEqual({ status: 500, body: { error: expect.stringContaining('{{params.nope}} of the lock name template "x:{{params.nope}}" is undefined') } });
  http.close();
  await closed;
});
