/**
 * `relock/express`: relock in an Express (4 or 5) app. Nothing here imports Express (its types are
 * described structurally), so the subpath costs nothing to an app that does not use it.
 *
 * ```ts
 * const locks = attachLocks(app, createLockClient({ url }));   // app.locals.locks
 * app.use(express.json(), lockContext());                      // one lock context per request
 * app.post('/orders/:id/pay', withLock('order:{{params.id}}', async (req, res) => { … }, { waitMs: 2000 }));
 * app.use(lockConflictHandler());                              // LockAcquireTimeoutError → 409
 * shutdownOnClose(app.listen(3000), locks);                    // server.close() → locks.shutdown()
 * ```
 *
 * See docs/express.md.
 *
 * @module
 */
import type { LockClient } from '../client.js';
import { runInContext } from '../context.js';
import { InvalidArgumentError, LockAcquireTimeoutError } from '../errors.js';
import { checkNameSource, lockName, type LockNameSource } from '../integrations/name-template.js';
import { checkLockedRunOptions, runLocked, type HeldLock, type LockedRunOptions } from '../integrations/run-locked.js';

export type { HeldLock, LockedRunOptions, LockKind } from '../integrations/run-locked.js';
export type { LockNameSource } from '../integrations/name-template.js';

/** What relock needs of an Express app: `app.locals`. */
export interface ExpressAppLike {
  locals: Record<string, unknown>;
}

/** What relock needs of an Express request: its app (`req.app.locals.locks`). */
export interface ExpressRequestLike {
  app: ExpressAppLike;
}

/** What the conflict handler needs of an Express response. */
export interface ExpressResponseLike {
  headersSent: boolean;
  status(code: number): { json(body: unknown): unknown };
}

/** Express's `next`. */
export type NextFunction = (error?: unknown) => void;

/** The `app.locals` key under which `attachLocks` puts the client: `app.locals.locks`. */
export const LOCKS_LOCAL = 'locks';

/**
 * Puts `client` on the app as `app.locals.locks` (Express's place for app-wide values, also reachable as
 * `req.app.locals.locks`), where `withLock` finds it. Returns `client`. Throws `InvalidArgumentError` when
 * `app` has no `locals` or `client` is not a `LockClient`.
 */
export function attachLocks<C extends LockClient>(app: ExpressAppLike, client: C): C {
  if (typeof app?.locals !== 'object' || app.locals === null) throw new InvalidArgumentError('app', 'must be an Express app (with app.locals)');
  if (typeof (client as Partial<LockClient> | undefined)?.getLock !== 'function') throw new InvalidArgumentError('client', 'must be a LockClient (createLockClient())');
  app.locals[LOCKS_LOCAL] = client;
  return client;
}

/** The client `attachLocks` put on `req.app`; throws `InvalidArgumentError` when there is none. */
export function locksOf(req: ExpressRequestLike): LockClient {
  const client = req.app?.locals?.[LOCKS_LOCAL] as LockClient | undefined;
  if (client === undefined) throw new InvalidArgumentError('app.locals.locks', 'no LockClient on the app: call attachLocks(app, client) first');
  return client;
}

/**
 * A middleware that runs the rest of the request in a new lock context (`runInContext`), so reentrancy
 * follows the request: two `lock()` calls on one name in the same request reenter, and `unlock()` by name
 * releases the request's own hold, while other requests are other owners. Register it after the body
 * parsers (`express.json()`): a parser that reads the body calls `next` from a stream event, outside the
 * context of the middlewares before it. Sends nothing to Redis.
 */
export function lockContext(): (req: unknown, res: unknown, next: NextFunction) => void {
  return (_req, _res, next) => runInContext(() => next());
}

/**
 * A route handler that runs `handler(req, res, held)` holding the lock named by `name` (a template read
 * from the request, `'order:{{params.id}}'`, or a function `(req) => string`) in a new lock context, and
 * releases it when the promise `handler` returns settles (so await the work, and send the response,
 * inside it). A nested `withLock` or `runLocked` on the same lock reenters. Errors go to `next`:
 * `LockAcquireTimeoutError` when `options.waitMs` ran out (map it with `lockConflictHandler`),
 * `InvalidArgumentError` for a name the template cannot build, the errors of `RLock.acquire`, `handler`'s.
 * The client is `req.app.locals.locks` (`attachLocks`). Throws `InvalidArgumentError` at once for a bad
 * `name` or option.
 */
export function withLock<Req extends ExpressRequestLike, Res>(name: LockNameSource<Req>, handler: (req: Req, res: Res, held: HeldLock) => unknown, options?: LockedRunOptions): (req: Req, res: Res, next: NextFunction) => Promise<void> {
  checkNameSource(name);
  checkLockedRunOptions(options);
  if (typeof handler !== 'function') throw new InvalidArgumentError('handler', 'must be a route handler (req, res, held) => …');
  return async (req, res, next) => {
    try {
      const client = locksOf(req);
      await tracked(client, runLocked(client, lockName(name, req), options, (held) => handler(req, res, held)));
    } catch (error) {
      next(error);
    }
  };
}

/**
 * The `withLock` runs of each client still under way, releases included: a handler sends its response
 * before its lock is released, so the server may emit `'close'` while the release is still on its way
 * to Redis, and `shutdownOnClose` waits for these before `shutdown()` (which would refuse the release).
 */
const runs = new WeakMap<LockClient, Set<Promise<unknown>>>();

/** Notes `run` among `client`'s runs until it settles; returns `run`. */
function tracked<T>(client: LockClient, run: Promise<T>): Promise<T> {
  let set = runs.get(client);
  if (set === undefined) runs.set(client, (set = new Set()));
  const settled = run.then(() => {}, () => {});
  set.add(settled);
  void settled.then(() => set.delete(settled));
  return run;
}

/** Resolves once no `withLock` run of `client` is under way. */
async function drained(client: LockClient): Promise<void> {
  const set = runs.get(client);
  while (set !== undefined && set.size > 0) await Promise.all(set);
}

/**
 * An error middleware (register it after the routes) that answers `LockAcquireTimeoutError` with HTTP 409
 * Conflict and `{ error: 'LOCK_ACQUIRE_TIMEOUT', lock, waitTimeMs }`, and passes every other error on. 409,
 * not 423 Locked: 423 is WebDAV's answer for a resource locked by a lock the client could see and unlock,
 * while here another request is working on it and a retry will likely succeed.
 */
export function lockConflictHandler(): (error: unknown, req: unknown, res: ExpressResponseLike, next: NextFunction) => void {
  return (error, _req, res, next) => {
    if (!(error instanceof LockAcquireTimeoutError) || res.headersSent) return next(error);
    res.status(409).json({ error: error.code, lock: error.lockName, waitTimeMs: error.waitTimeMs });
  };
}

/** What `shutdownOnClose` needs of a server: Node's `http.Server` (`app.listen()`'s result) has it. */
export interface ClosableServer {
  once(event: 'close', listener: () => void): unknown;
}

/**
 * Shuts `client` down when `server` emits `'close'` (after `server.close()` and the last connection
 * ended) and the `withLock` runs of this client still under way have settled (a handler's response goes
 * out before its lock is released, so a release can still be on its way at `'close'`; a handler that
 * answered and goes on working delays the shutdown until it ends): its watchdog stops, waiters reject
 * with `ClientClosedError`, connections relock opened close (see `LockClient.shutdown`). So a request
 * that holds a lock when SIGTERM comes finishes and releases it, and no key is left. Resolves when that
 * shutdown is done, so `await` it before closing a Redis client you passed as `redis`. Never rejects.
 */
export function shutdownOnClose(server: ClosableServer, client: LockClient): Promise<void> {
  return new Promise((resolve) => server.once('close', () => void drained(client).then(() => client.shutdown()).then(resolve)));
}
