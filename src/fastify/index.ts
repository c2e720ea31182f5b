/**
 * `relock/fastify`: relock as a Fastify (5) plugin, built with `fastify-plugin` so that its decorator
 * and hook apply to the whole app. Fastify and fastify-plugin are optional peer dependencies: an app that
 * does not import this subpath loads neither.
 *
 * ```ts
 * await app.register(relockPlugin, { url: 'redis://localhost:6379' });   // app.locks; onClose → shutdown
 * app.post('/orders/:id/pay', withLock('order:{{params.id}}', async (req, reply) => { … }, { waitMs: 2000 }));
 * ```
 *
 * See docs/fastify.md.
 *
 * @module
 */
import fastifyPlugin from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createLockClient, type LockClient, type LockClientOptions } from '../client.js';
import { runInContext } from '../context.js';
import { InvalidArgumentError, LockAcquireTimeoutError } from '../errors.js';
import { checkNameSource, lockName, type LockNameSource } from '../integrations/name-template.js';
import { checkLockedRunOptions, runLocked, type HeldLock, type LockedRunOptions } from '../integrations/run-locked.js';

export type { HeldLock, LockedRunOptions, LockKind } from '../integrations/run-locked.js';
export type { LockNameSource } from '../integrations/name-template.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's `LockClient`, decorated by `relockPlugin`. */
    locks: LockClient;
  }
}

/**
 * Options of `relockPlugin`: either `client`, a `LockClient` you made, or the options of
 * `createLockClient` (`redis` or `url`, and the rest), from which the plugin makes one.
 */
export type RelockPluginOptions = (
  | {
      /** A `LockClient` you made (`createLockClient()`); not together with client options. */
      client: LockClient;
    }
  | LockClientOptions
) & {
  /**
   * Whether the app's close (`app.close()`, its `onClose` hook) shuts the client down (`LockClient.shutdown`:
   * the watchdog stops, waiters reject with `ClientClosedError`, connections relock opened close). Default
   * true; give false for a `client` shared with code that outlives the app.
   */
  shutdownOnClose?: boolean;
  /**
   * Whether every request runs in its own lock context (a `preHandler` hook around the handler), so
   * reentrancy follows the request: two `lock()` calls on one name in a handler reenter, `unlock()` by
   * name releases the request's own hold. Default true.
   */
  requestContext?: boolean;
};

function relock(app: FastifyInstance, options: RelockPluginOptions, done: (error?: Error) => void): void {
  let client: LockClient;
  const { shutdownOnClose = true, requestContext = true, ...rest } = options ?? {};
  try {
    client = 'client' in rest ? givenClient(rest) : createLockClient(rest);
  } catch (error) {
    return done(error as Error);
  }
  app.decorate('locks', client);
  if (requestContext) app.addHook('preHandler', (_req, _reply, next) => runInContext(() => next()));
  if (shutdownOnClose) app.addHook('onClose', () => client.shutdown());
  done();
}

function givenClient(options: { client: LockClient }): LockClient {
  if (Object.keys(options).length > 1) throw new InvalidArgumentError('client', 'give either `client` or the options of createLockClient, not both');
  if (typeof (options.client as Partial<LockClient> | undefined)?.getLock !== 'function') throw new InvalidArgumentError('client', 'must be a LockClient (createLockClient())');
  return options.client;
}

/**
 * The plugin: decorates the app with `app.locks` (the `LockClient`), runs each request's handler in its
 * own lock context, and shuts the client down in `onClose` (see `RelockPluginOptions`). Register it with
 * `await app.register(relockPlugin, options)`. Registration fails with `InvalidArgumentError` for a bad
 * option (as `createLockClient`). Nothing is sent to Redis until a lock is used.
 */
export const relockPlugin = fastifyPlugin(relock, { fastify: '5.x', name: 'relock' });

/**
 * A route handler that runs `handler(req, reply, held)` holding the lock named by `name` (a template read
 * from the request, `'order:{{params.id}}'`, or a function `(req) => string`) in a new lock context, and
 * resolves to what `handler` resolved to (Fastify sends it), releasing the lock when it settles. A nested
 * lock of the same name inside reenters. When `options.waitMs` runs out (`LockAcquireTimeoutError`) it
 * answers 409 Conflict with `{ error: 'LOCK_ACQUIRE_TIMEOUT', lock, waitTimeMs }` (409, not WebDAV's 423:
 * another request is working on the resource, and a retry will likely succeed). Other errors (a name the
 * template cannot build: `InvalidArgumentError`; `RLock.acquire`'s; `handler`'s) go to Fastify's error
 * handler. The client is `req.server.locks` (`relockPlugin`). Throws `InvalidArgumentError` at once for a
 * bad `name` or option.
 */
export function withLock<Req extends FastifyRequest, Reply extends FastifyReply, T>(name: LockNameSource<Req>, handler: (req: Req, reply: Reply, held: HeldLock) => T | Promise<T>, options?: LockedRunOptions): (req: Req, reply: Reply) => Promise<T | Reply> {
  checkNameSource(name);
  checkLockedRunOptions(options);
  if (typeof handler !== 'function') throw new InvalidArgumentError('handler', 'must be a route handler (req, reply, held) => …');
  return async (req, reply) => {
    const client = (req.server as Partial<FastifyInstance>).locks;
    if (client === undefined) throw new InvalidArgumentError('app.locks', 'no LockClient on the app: register relockPlugin first');
    try {
      return await runLocked(client, lockName(name, req), options, (held) => handler(req, reply, held));
    } catch (error) {
      if (!(error instanceof LockAcquireTimeoutError) || reply.sent) throw error;
      return reply.code(409).send({ error: error.code, lock: error.lockName, waitTimeMs: error.waitTimeMs }) as Reply;
    }
  };
}
