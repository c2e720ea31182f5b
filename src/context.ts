import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';

/**
 * Lock contexts: Node's stand-in for Java threads in Redisson's owner id (`clientId:threadId`).
 *
 * A context is opened by `runInContext(fn)` and by `withLock(name, fn)`, and follows `fn` through every
 * `await`, timer and callback (AsyncLocalStorage). Contexts nest: each remembers its parent and the
 * locks it acquired. An acquisition inside a context reenters when the context or one of its ancestors
 * holds that lock; otherwise it is owned by the innermost context. Outside any context, each lock object
 * is its own owner.
 */
export interface LockContext {
  /** Random id, the second half of the owner id `clientId:contextId`. */
  readonly id: string;
  readonly parent: LockContext | undefined;
  /** The locks this context acquired, by `clientId + ' ' + key`. */
  readonly holds: Map<string, Hold>;
}

/** A lock held by a context: how many times, and since when (monotonic ms, for the hold-time log). */
export interface Hold {
  count: number;
  readonly since: number;
  /** One entry per hold, innermost last: true when the watchdog renews it, false when it has a lease. */
  readonly renewed: boolean[];
}

const storage = new AsyncLocalStorage<LockContext>();

/** A random id (12 random bytes in base64url, 16 characters), for ids that must be unique across processes. */
export function randomId(): string {
  return randomBytes(12).toString('base64url');
}

let sequence = 0;

/**
 * A new id unique within this process (a base-36 counter): context ids and request ids are always used
 * behind the client's random id, so they need not be random, and counting is much cheaper than reading
 * random bytes on every lock operation.
 */
export function newId(): string {
  return (sequence++).toString(36);
}

/** A context that is not entered; lock objects use one as their owner outside any context. */
export function detachedContext(): LockContext {
  return { id: newId(), parent: undefined, holds: new Map() };
}

/** The innermost context of the caller, if any. */
export function currentContext(): LockContext | undefined {
  return storage.getStore();
}

/**
 * Runs `fn` in a new context nested in the caller's: locks acquired inside are owned by it (or reenter
 * when the caller's contexts already hold them). Returns what `fn` returns.
 */
export function runInContext<T>(fn: () => T): T {
  return storage.run({ id: newId(), parent: storage.getStore(), holds: new Map() }, fn);
}

/**
 * The context that owns (or would own) the lock `holdKey` for the caller: the nearest context up the
 * chain that holds it, else the innermost context, else `fallback`.
 */
export function owningContext(holdKey: string, fallback: LockContext): LockContext {
  const current = storage.getStore();
  for (let ctx = current; ctx; ctx = ctx.parent) {
    if (ctx.holds.has(holdKey)) return ctx;
  }
  return current ?? fallback;
}

/** Records one more hold, renewed by the watchdog or with a lease. Returns the hold record. */
export function recordAcquired(ctx: LockContext, holdKey: string, renewed: boolean, now: number): Hold {
  let hold = ctx.holds.get(holdKey);
  if (!hold) ctx.holds.set(holdKey, (hold = { count: 0, since: now, renewed: [] }));
  hold.count++;
  hold.renewed.push(renewed);
  return hold;
}

/**
 * Whether the hold a release gives back is renewed by the watchdog: `renewed` when the caller knows (a
 * handle), else the innermost hold's (holds are released innermost first), else true.
 */
export function releasedRenewed(ctx: LockContext, holdKey: string, renewed: boolean | undefined): boolean {
  return renewed ?? ctx.holds.get(holdKey)?.renewed.at(-1) ?? true;
}

/**
 * Records one hold fewer (of the kind `renewed`), or forgets the lock when `all`. Returns the record as it
 * was (for its start time), if any.
 */
export function recordReleased(ctx: LockContext, holdKey: string, renewed: boolean, all = false): Hold | undefined {
  const hold = ctx.holds.get(holdKey);
  if (!hold) return undefined;
  const i = hold.renewed.lastIndexOf(renewed);
  hold.renewed.splice(i >= 0 ? i : hold.renewed.length - 1, 1);
  if (all || --hold.count <= 0) ctx.holds.delete(holdKey);
  return hold;
}

/** Runs `fn` outside every context, so that timers and listeners it creates do not keep one alive. */
export function outsideContexts<T>(fn: () => T): T {
  return storage.exit(fn);
}
