/**
 * An app of one framework, started as the framework's docs say, with the SIGTERM handling they recommend
 * (docs/nestjs.md: `app.enableShutdownHooks()`; docs/express.md: `server.close()` then `process.exit(0)`
 * once `shutdownOnClose` resolved; docs/fastify.md: `app.close()`). argv[2]: JSON `{ url, framework:
 * 'nestjs' | 'express' | 'fastify', name }`. Listens on a free loopback port and prints `{ type: 'ready',
 * port }`. `POST /hold` takes the watchdog lock `name` (the framework's `withLock` / `@WithLock`, the client
 * made from `url` with a 30 s `lockWatchdogTimeout`), prints `{ type: 'holding' }` and keeps holding until
 * the app has stopped accepting connections (its HTTP server no longer listens: the close is under way),
 * then answers `{ ok: true }`, releasing the lock. So the request is in flight when SIGTERM arrives, and
 * its release comes after the close started: a client shut down before the server's in-flight requests
 * ended would refuse the release (`ClientClosedError`) and leave the key until its lease ran out.
 */
import { Controller, Inject, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import express, { type Request, type Response } from 'express';
import Fastify from 'fastify';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { attachLocks, shutdownOnClose, withLock as expressWithLock } from '../../../src/express/index.js';
import { relockPlugin, withLock as fastifyWithLock } from '../../../src/fastify/index.js';
import { createLockClient } from '../../../src/index.js';
import { RelockModule, WithLock } from '../../../src/nestjs/index.js';
import { decorateClass, decorateMethod, decorateParameter } from '../../frameworks/decorate.js';

const args = JSON.parse(process.argv[2] ?? '{}') as { url: string; framework: 'nestjs' | 'express' | 'fastify'; name: string };
const say = (message: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(message)}\n`);
/** 30 s: far longer than the test waits, so that a key left behind cannot vanish by its lease ending. */
const clientOptions = { url: args.url, lockWatchdogTimeout: 30_000 };

let server: Server | undefined;

/** The handler's work: announces the hold, then waits (polling) until the HTTP server stopped listening. */
async function hold(): Promise<{ ok: true }> {
  say({ type: 'holding' });
  while (server!.listening) await delay(5);
  return { ok: true };
}

function ready(): void {
  say({ type: 'ready', port: (server!.address() as AddressInfo).port });
}

if (args.framework === 'nestjs') {
  class HoldService {
    hold(): Promise<{ ok: true }> {
      return hold();
    }
  }
  decorateMethod(HoldService, 'hold', WithLock(args.name));
  class HoldController {
    constructor(private readonly service: HoldService) {}
    hold(): Promise<{ ok: true }> {
      return this.service.hold();
    }
  }
  decorateParameter(HoldController, undefined, 0, Inject(HoldService));
  decorateMethod(HoldController, 'hold', Post('hold'));
  decorateClass(HoldController, Controller());
  class AppModule {}
  decorateClass(AppModule, Module({ imports: [RelockModule.forRoot(clientOptions)], controllers: [HoldController], providers: [HoldService] }));
  const app = await NestFactory.create(AppModule, { logger: false });
  app.enableShutdownHooks(); // SIGTERM → app.close(): the server closes, then LockClient.shutdown()
  await app.listen(0, '127.0.0.1');
  server = app.getHttpServer() as Server;
} else if (args.framework === 'express') {
  const app = express();
  const locks = attachLocks(app, createLockClient(clientOptions));
  app.post('/hold', expressWithLock(args.name, async (_req: Request, res: Response) => void res.json(await hold())));
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const closed = shutdownOnClose(server, locks);
  process.once('SIGTERM', () => {
    server!.close();
    void closed.then(() => process.exit(0));
  });
} else {
  const app = Fastify();
  await app.register(relockPlugin, clientOptions);
  app.post('/hold', fastifyWithLock(args.name, () => hold()));
  await app.listen({ port: 0, host: '127.0.0.1' });
  server = app.server;
  process.once('SIGTERM', () => void app.close()); // onClose → app.locks.shutdown()
}
ready();
