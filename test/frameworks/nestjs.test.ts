/**
 * relock/nestjs in real Nest apps (built with @nestjs/testing, listening on loopback through
 * @nestjs/platform-express): two instances (two apps, two LockClients, two Redis connections) against one
 * Redis, driven by 40 requests, 8 at a time, over 3 keys, on node-redis and ioredis. The classes are
 * decorated by calls (test/frameworks/decorate.ts) since the repository compiles without experimentalDecorators.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Inject, Module, Param, Post, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import { ClientClosedError, createLockClient, InvalidArgumentError, type LockClient } from '../../src/index.js';
import { currentLock, InjectLockClient, LOCK_CLIENT, LockConflictFilter, RelockModule, RunExclusive, WithLock, type RelockModuleOptions } from '../../src/nestjs/index.js';
import { connect, keys, uniqueName, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { decorateClass, decorateMethod, decorateParameter } from './decorate.js';
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

const TRACKERS = Symbol('trackers');
interface Trackers {
  locked: WorkTracker;
  unlocked: WorkTracker;
  jobs: number;
}

class OrdersService {
  constructor(
    private readonly trackers: Trackers,
    private readonly client: LockClient,
  ) {}

  async pay(order: { userId: string }): Promise<{ ok: true }> {
    await this.trackers.locked.run(order.userId);
    return { ok: true };
  }

  async payUnlocked(order: { userId: string }): Promise<{ ok: true }> {
    await this.trackers.unlocked.run(order.userId);
    return { ok: true };
  }

  async outer(order: { userId: string }): Promise<{ holds: number; name: string | undefined }> {
    return this.inner(order);
  }

  async inner(order: { userId: string }): Promise<{ holds: number; name: string | undefined }> {
    return { holds: await this.client.getLock(`nested:${order.userId}`).getHoldCount(), name: currentLock()?.name };
  }

  async fenced(_id: string): Promise<{ token: string; kind: string | undefined }> {
    return { token: String(currentLock()?.token), kind: currentLock()?.kind };
  }

  async busy(_id: string): Promise<{ ok: true }> {
    return { ok: true };
  }

  async tick(): Promise<string> {
    this.trackers.jobs++;
    return 'ticked';
  }
}
decorateParameter(OrdersService, undefined, 0, Inject(TRACKERS));
decorateParameter(OrdersService, undefined, 1, InjectLockClient());
decorateMethod(OrdersService, 'pay', WithLock('order:{{0.userId}}'));
decorateMethod(OrdersService, 'outer', WithLock('nested:{{0.userId}}', { waitMs: 300 }));
decorateMethod(OrdersService, 'inner', WithLock('nested:{{0.userId}}', { waitMs: 300 }));
decorateMethod(OrdersService, 'fenced', WithLock((args) => `fenced:${String(args[0])}`, { kind: 'fenced' }));
decorateMethod(OrdersService, 'busy', WithLock('busy:{{0}}', { waitMs: 0 }));
decorateMethod(OrdersService, 'tick', RunExclusive('tick', { atMostMs: 10_000, atLeastMs: 5_000 }));

class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly client: LockClient,
  ) {}

  pay(id: string): Promise<unknown> {
    return this.orders.pay({ userId: id });
  }

  payUnlocked(id: string): Promise<unknown> {
    return this.orders.payUnlocked({ userId: id });
  }

  nested(id: string): Promise<unknown> {
    return this.orders.outer({ userId: id });
  }

  fenced(id: string): Promise<unknown> {
    return this.orders.fenced(id);
  }

  busy(id: string): Promise<unknown> {
    return this.orders.busy(id);
  }

  async reenter(id: string): Promise<unknown> {
    const lock = this.client.getLock(`plain:${id}`);
    await lock.lock();
    await lock.lock(); // the request's context holds it: a reentry
    const holds = await lock.getHoldCount();
    await lock.unlock();
    await lock.unlock();
    return { holds };
  }

  tick(): Promise<unknown> {
    return this.orders.tick().then((value) => ({ value: value ?? null }));
  }
}
decorateParameter(OrdersController, undefined, 0, Inject(OrdersService));
decorateParameter(OrdersController, undefined, 1, InjectLockClient());
decorateClass(OrdersController, Controller());
for (const [method, path] of [['pay', 'locked/:id'], ['payUnlocked', 'unlocked/:id'], ['nested', 'nested/:id'], ['fenced', 'fenced/:id'], ['busy', 'busy/:id'], ['reenter', 'reenter/:id'], ['tick', 'tick']] as const) {
  if (path.includes(':id')) decorateParameter(OrdersController, method, 0, Param('id'));
  decorateMethod(OrdersController, method, Post(path));
}

interface Instance {
  app: INestApplication;
  base: string;
  client: LockClient;
}

async function nestApp(relock: ReturnType<typeof RelockModule.forRoot>, trackers: Trackers): Promise<Instance> {
  class AppModule {}
  decorateClass(AppModule, Module({ imports: [relock], controllers: [OrdersController], providers: [OrdersService, { provide: TRACKERS, useValue: trackers }] }));
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  app.useGlobalFilters(new LockConflictFilter());
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, base: `http://127.0.0.1:${port}`, client: app.get<LockClient>(LOCK_CLIENT) };
}

const trackers = (): Trackers => ({ locked: new WorkTracker(), unlocked: new WorkTracker(), jobs: 0 });

describe.each(FAMILIES)('relock/nestjs on $name', (family) => {
  let opened: Array<{ client: object; close(): Promise<unknown> }>;
  beforeAll(async () => {
    opened = await Promise.all([family.open(server.url), family.open(server.url)]);
  });
  afterAll(async () => {
    await Promise.all(opened.map((o) => o.close()));
  });

  const forRoot = (redisClient: object, keyPrefix: string, extra: Partial<RelockModuleOptions> = {}): ReturnType<typeof RelockModule.forRoot> => RelockModule.forRoot({ redis: redisClient, keyPrefix, ...extra } as RelockModuleOptions);

  it('two instances: no duplicate work with @WithLock, duplicates without it; app.close() shuts the clients down and leaves no key', async () => {
    const keyPrefix = `${uniqueName('nest')}:`;
    const shared = trackers();
    const apps = await Promise.all(opened.map((o) => nestApp(forRoot(o.client, keyPrefix), shared)));
    const bases = apps.map((a) => a.base);
    expect(await drive(bases, (key) => `/locked/${key}`)).toEqual(Array(40).fill(201));
    expect({ runs: shared.locked.runs, duplicates: shared.locked.duplicates }).toEqual({ runs: 40, duplicates: 0 });
    expect(await drive(bases, (key) => `/unlocked/${key}`)).toEqual(Array(40).fill(201));
    expect(shared.unlocked.duplicates).toBeGreaterThan(0);

    await Promise.all(apps.map((a) => a.app.close()));
    for (const { client } of apps) {
      expect(client.stats()).toMatchObject({ watchdogHolds: 0, subscriptions: 0, lingeringSubscriptions: 0 });
      await expect(client.getLock('after').lock()).rejects.toBeInstanceOf(ClientClosedError);
    }
    expect(await keys(redis, `${keyPrefix}*`)).toEqual([]);
  }, 60_000);

  it('a nested decorated call on the same lock reenters (hold count 2); the fencing token reaches the method; waitMs 0 on a busy lock is a 409 through LockConflictFilter', async () => {
    const keyPrefix = `${uniqueName('nest-kinds')}:`;
    const one = await nestApp(forRoot(opened[0]!.client, keyPrefix), trackers());
    expect(await post(`${one.base}/nested/u1`)).toEqual({ status: 201, body: { holds: 2, name: 'nested:u1' } });
    const first = await post(`${one.base}/fenced/x`);
    const second = await post(`${one.base}/fenced/x`);
    expect(first).toEqual({ status: 201, body: { token: expect.stringMatching(/^\d+$/), kind: 'fenced' } });
    expect(BigInt((second.body as { token: string }).token)).toBe(BigInt((first.body as { token: string }).token) + 1n);
    const handle = await one.client.getLock('busy:y').acquire();
    expect(await post(`${one.base}/busy/y`)).toEqual({ status: 409, body: { statusCode: 409, error: 'LOCK_ACQUIRE_TIMEOUT', lock: 'busy:y', waitTimeMs: 0 } });
    await handle.release();
    expect(await post(`${one.base}/busy/y`)).toEqual({ status: 201, body: { ok: true } });
    await one.app.close();
  });

  it('the request context: lock() twice in one request reenters; with requestContext false the second is refused', async () => {
    const keyPrefix = `${uniqueName('nest-ctx')}:`;
    const on = await nestApp(forRoot(opened[0]!.client, keyPrefix), trackers());
    const off = await nestApp(forRoot(opened[0]!.client, keyPrefix, { requestContext: false }), trackers());
    expect(await post(`${on.base}/reenter/a`)).toEqual({ status: 201, body: { holds: 2 } });
    expect(await post(`${off.base}/reenter/a`)).toMatchObject({ status: 500 });
    await Promise.all([on.app.close(), off.app.close()]);
  });

  it('@RunExclusive: the job fired on both instances at once runs once, and not again within atLeastMs', async () => {
    const keyPrefix = `${uniqueName('nest-job')}:`;
    const shared = trackers();
    const apps = await Promise.all(opened.map((o) => nestApp(forRoot(o.client, keyPrefix), shared)));
    const results = await Promise.all(apps.map((a) => post(`${a.base}/tick`)));
    expect(results.map((r) => (r.body as { value: string | null }).value ?? 'skipped').sort()).toEqual(['skipped', 'ticked']);
    expect(await post(`${apps[0]!.base}/tick`)).toEqual({ status: 201, body: { value: null } });
    expect(shared.jobs).toBe(1);
    expect(await redis.pTTL(`${keyPrefix}tick`)).toBeGreaterThan(1000);
    await Promise.all(apps.map((a) => a.app.close()));
  });
});

it('forRootAsync builds the client from useFactory with injected providers; bad input is refused', async () => {
  const keyPrefix = `${uniqueName('nest-async')}:`;
  const CONFIG = Symbol('config');
  class ConfigModule {}
  decorateClass(ConfigModule, Module({ providers: [{ provide: CONFIG, useValue: { keyPrefix } }], exports: [CONFIG] }));
  const one = await nestApp(RelockModule.forRootAsync({ imports: [ConfigModule], inject: [CONFIG], useFactory: (config: { keyPrefix: string }) => ({ redis, keyPrefix: config.keyPrefix }) }), trackers());
  expect(await post(`${one.base}/nested/a`)).toEqual({ status: 201, body: { holds: 2, name: 'nested:a' } });
  await one.app.close();
  await expect(one.client.getLock('x').lock()).rejects.toBeInstanceOf(ClientClosedError);

  expect(() => RelockModule.forRoot({ redis, lockWatchdogTimeout: 1 })).toThrow(InvalidArgumentError);
  expect(() => RelockModule.forRootAsync({} as never)).toThrow(/useFactory/);
  // A client given alone is taken as it is; with createLockClient options beside it, refused.
  const given = createLockClient({ redis });
  expect(RelockModule.forRoot({ client: given, requestContext: false }).providers).toContainEqual({ provide: LOCK_CLIENT, useValue: given });
  expect(() => RelockModule.forRoot({ client: given, keyPrefix: 'x:' } as never)).toThrow(/either `client` or the options of createLockClient/);
  await given.shutdown();
  expect(() => RunExclusive('job', null as never)).toThrow(expect.objectContaining({ name: 'InvalidArgumentError', argument: 'options' }));
  expect(() => WithLock('')).toThrow(InvalidArgumentError);
  expect(() => WithLock('a', { kind: 'mutex' as 'lock' })).toThrow(/kind/);
  class Plain {
    async work(): Promise<void> {}
  }
  decorateMethod(Plain, 'work', WithLock('w'));
  await expect(new Plain().work()).rejects.toThrow(/no LockClient was injected/);
});
