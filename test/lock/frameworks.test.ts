/**
 * One lock object hoisted to module scope and used from real Express and Fastify request handlers (issue
 * 16, defect 1): concurrent requests must not share its ownership, with or without the per-request lock
 * context middleware of docs/cookbook.md. Real HTTP requests on a free port.
 */
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import express from 'express';
import Fastify from 'fastify';
import { runInContext, type RLock } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { lockClient, sleep, uniqueName } from '../support/helpers.js';

const env = useRedis();

/** Concurrent requests per test. */
const REQUESTS = 5;

/**
 * The handler's work: the pattern on a shared object (`tryLock(1, 5, 'seconds')` … `unlock()`),
 * with a nested re-take when `reenter` (a helper that takes the lock its caller holds: only meaningful
 * inside a per-request context). Records the most requests inside the critical section at once.
 */
function inventory(lock: RLock, reenter: boolean): { handle(): Promise<number>; most(): number } {
  let inside = 0;
  let most = 0;
  return {
    async handle() {
      if (!(await lock.tryLock(5, 10, 'seconds'))) return 409;
      try {
        most = Math.max(most, ++inside);
        if (reenter) {
          expect(await lock.tryLock(0, 10, 'seconds')).toBe(true);
          expect(await lock.getHoldCount()).toBe(2);
          await lock.unlock();
        }
        await sleep(30);
        inside--;
      } finally {
        await lock.unlock();
      }
      return 200;
    },
    most: () => most,
  };
}

/** `REQUESTS` concurrent POSTs to `url`; resolves to their status codes. */
function post(url: string): Promise<number[]> {
  return Promise.all(Array.from({ length: REQUESTS }, async () => (await fetch(url, { method: 'POST' })).status));
}

describe('a hoisted lock object in HTTP handlers', () => {
  for (const middleware of [false, true]) {
    const variant = middleware ? 'with the per-request context middleware' : 'without a context';
    it(`Express, ${variant}: one request inside at a time`, async () => {
      const work = inventory(lockClient(env.redis).getLock(uniqueName('inventory')), middleware);
      const app = express();
      if (middleware) app.use((_req, _res, next) => runInContext(next));
      app.post('/buy', async (_req, res) => {
        res.status(await work.handle()).end();
      });
      const server = await new Promise<ReturnType<typeof app.listen>>((resolve) => {
        const s = app.listen(0, '127.0.0.1', () => resolve(s));
      });
      try {
        const { port } = server.address() as AddressInfo;
        expect(await post(`http://127.0.0.1:${port}/buy`)).toEqual(Array.from({ length: REQUESTS }, () => 200));
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
      expect(work.most()).toBe(1);
    });

    it(`Fastify, ${variant}: one request inside at a time`, async () => {
      const work = inventory(lockClient(env.redis).getLock(uniqueName('inventory')), middleware);
      const app = Fastify();
      if (middleware) app.addHook('preHandler', (_request, _reply, done) => runInContext(done));
      app.post('/buy', async (_request, reply) => {
        await reply.code(await work.handle()).send();
      });
      try {
        await app.listen({ port: 0, host: '127.0.0.1' });
        const { port } = app.server.address() as AddressInfo;
        expect(await post(`http://127.0.0.1:${port}/buy`)).toEqual(Array.from({ length: REQUESTS }, () => 200));
      } finally {
        await app.close();
      }
      expect(work.most()).toBe(1);
    });
  }
});
