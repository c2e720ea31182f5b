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

/**
 * Records one more (+1) or one fewer (-1) hold, or forgets the lock (`0`). Returns the hold as it was
 * before a release (for its start time), or the new hold after an acquisition.
 */
export function recordHold(ctx: LockContext, holdKey: string, delta: 1 | -1 | 0, now: number): Hold | undefined {
  const hold = ctx.holds.get(holdKey);
  if (delta === 1) {
    if (hold) hold.count++;
    else ctx.holds.set(holdKey, { count: 1, since: now });
    return ctx.holds.get(holdKey);
  }
  if (hold && (delta === 0 || --hold.count <= 0)) ctx.holds.delete(holdKey);
  return hold;
}

/** Runs `fn` outside every context, so that timers and listeners it creates do not keep one alive. */
export function outsideContexts<T>(fn: () => T): T {
  return storage.exit(fn);
}
