import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { processWide } from './shared-state.js';

/**
 * Lock contexts: Node's stand-in for Java threads in Redisson's owner id (`clientId:threadId`).
 *
 * A context is opened by `runInContext(fn)` and by `withLock(name, fn)`, and follows `fn` through every
 * `await`, timer and callback (AsyncLocalStorage). Contexts nest: each remembers its parent and the
 * locks it acquired. An acquisition inside a context reenters when the context or one of its ancestors
 * holds that lock; otherwise it is owned by the innermost context. Outside any context, each acquisition
 * gets a detached context of its own (see `RLock`): a lock object then behaves as a mutex.
 */
export interface LockContext {
  /** Random id, the second half of the owner id `clientId:contextId`. */
  readonly id: string;
  readonly parent: LockContext | undefined;
  /** The locks this context acquired, by `clientId + ' ' + key`. */
  readonly holds: HeldLocks;
  /** True for the owner of one acquisition made outside any context (never entered, never reused by another call). */
  readonly detached: boolean;
  /**
   * An owner id used verbatim instead of `clientId:contextId`: a caller-given one (`acquire({ identifier })`),
   * or, for a contextless `lock()`/`tryLock()`, that same `clientId:contextId` made once (see `clientDetachedContext`).
   */
  readonly owner?: string;
  /**
   * Locks (by hold key) for which an acquisition attempt of this owner failed ambiguously (its reply was
   * lost: Redis may have granted it) and no later answer settled it. The owner's next acquisition of the
   * lock adopts such a grant instead of adding a hold (see `acquire` in lock/protocol/acquire.ts).
   */
  unsettled?: Map<string, Unsettled>;
  /** Acquisition attempts of this owner in flight, by hold key: an unlock of the owner waits for them. */
  flights?: Map<string, Flights>;
  /**
   * For a detached owner whose hold a lock object keeps among its contextless holds (see `RLock`): monotonic
   * ms after which that hold's lease has ended (Infinity while the watchdog renews it). The hold's record
   * is the context itself (no object of its own per held lock).
   */
  until?: number;
  /** For such an owner: an `unlock()` is releasing its hold. */
  releasing?: boolean;
}

/** A lock left unsettled for an owner by a lost reply (see `LockContext.unsettled`). */
export interface Unsettled {
  /** Monotonic ms after which a grant of the lost attempt has expired. */
  until: number;
  /** An attempt that adopts such a grant (guard armed) was sent since. */
  tried: boolean;
}

/** Attempts in flight (sent, their outcome not yet recorded), and the unlocks waiting until there are none. */
export interface Flights {
  count: number;
  readonly idle: Array<() => void>;
}

/** A lock held by a context: how many times, and since when (monotonic ms, for the debug log's hold time; 0 when debug logging is off). */
export interface Hold {
  count: number;
  readonly since: number;
  /**
   * One entry per hold, innermost last: true when the watchdog renews it, false when it has a lease. The
   * flag of a single hold inline (most holds: no list kept per held lock), a list from the second on.
   */
  renewed: boolean | boolean[];
}

/**
 * The locks a context holds, by hold key: the first inline, a `Map` only from the second on (most
 * contexts, and every contextless owner, hold one lock, and an empty `Map` alone costs ~180 bytes).
 */
export class HeldLocks {
  private key: string | undefined;
  private hold: Hold | undefined;
  private more: Map<string, Hold> | undefined;

  get(key: string): Hold | undefined {
    return key === this.key ? this.hold : this.more?.get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** True when the context holds no lock. */
  isEmpty(): boolean {
    return this.key === undefined && !this.more?.size;
  }

  set(key: string, hold: Hold): void {
    if (this.key === undefined || this.key === key) {
      this.key = key;
      this.hold = hold;
    } else (this.more ??= new Map()).set(key, hold);
  }

  delete(key: string): void {
    if (key !== this.key) this.more?.delete(key);
    else {
      this.key = undefined;
      this.hold = undefined;
    }
  }
}

/** The lock contexts: one store per process, shared by the ES module and CommonJS builds (see shared-state.ts). */
const storage = processWide('contexts', () => new AsyncLocalStorage<LockContext>());

/** A random id (12 random bytes in base64url, 16 characters), for ids that must be unique across processes. */
export function randomId(): string {
  return randomBytes(12).toString('base64url');
}

/** The counter behind `newId()`: one per process, so contexts made by either build never share an id. */
const ids = processWide('ids', () => ({ next: 0 }));

/**
 * A new id unique within this process (a base-36 counter): context ids and request ids are always used
 * behind the client's random id, so they need not be random, and counting is much cheaper than reading
 * random bytes on every lock operation.
 */
export function newId(): string {
  return (ids.next++).toString(36);
}

/** A context that is not entered: the owner of one acquisition made outside any context (`owner`: a caller-given owner id). */
export function detachedContext(owner?: string): LockContext {
  return owner === undefined ? { id: newId(), parent: undefined, holds: new HeldLocks(), detached: true, until: 0, releasing: false } : { id: newId(), parent: undefined, holds: new HeldLocks(), detached: true, owner, until: 0, releasing: false };
}

/**
 * A detached context (see `detachedContext`) of an acquisition by the client `clientId`, its owner id
 * `clientId:contextId` made at once: the acquisition and the unlock of its hold send that one string
 * instead of building one each (`RLock.ownerOf`).
 */
export function clientDetachedContext(clientId: string): LockContext {
  const id = newId();
  return { id, parent: undefined, holds: new HeldLocks(), detached: true, owner: `${clientId}:${id}`, until: 0, releasing: false };
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
  return storage.run({ id: newId(), parent: storage.getStore(), holds: new HeldLocks(), detached: false }, fn);
}

/**
 * The context that owns (or would own) the lock `holdKey` (or `otherKey`, the other side of a read-write
 * lock) for the caller: the nearest context up the chain that holds it, else the innermost context; none
 * outside any context.
 */
export function owningContext(holdKey: string, otherKey?: string): LockContext | undefined {
  const current = storage.getStore();
  for (let ctx = current; ctx; ctx = ctx.parent) {
    if (ctx.holds.has(holdKey) || (otherKey !== undefined && ctx.holds.has(otherKey))) return ctx;
  }
  return current;
}

/** Counts one more acquisition attempt of `ctx` on `holdKey` in flight; `landed` ends it. */
export function takeOff(ctx: LockContext, holdKey: string): void {
  const flights = (ctx.flights ??= new Map<string, Flights>());
  const f = flights.get(holdKey);
  if (f) f.count++;
  else flights.set(holdKey, { count: 1, idle: [] });
}

/** Ends one attempt counted by `takeOff`; when none is left, the unlocks waiting for them go on. */
export function landed(ctx: LockContext, holdKey: string): void {
  const f = ctx.flights?.get(holdKey);
  if (!f || --f.count > 0) return;
  ctx.flights!.delete(holdKey);
  for (const resume of f.idle) resume();
}

/** Resolves once `ctx` has no acquisition attempt on `holdKey` in flight; undefined (no wait) when it has none. */
export function allLanded(ctx: LockContext, holdKey: string): Promise<void> | undefined {
  const f = ctx.flights?.get(holdKey);
  return f ? new Promise((resolve) => f.idle.push(resolve)) : undefined;
}

/** Records one more hold, renewed by the watchdog or with a lease. Returns the hold record. */
export function recordAcquired(ctx: LockContext, holdKey: string, renewed: boolean, now: number): Hold {
  const hold = ctx.holds.get(holdKey);
  if (!hold) {
    const first: Hold = { count: 1, since: now, renewed };
    ctx.holds.set(holdKey, first);
    return first;
  }
  hold.count++;
  if (Array.isArray(hold.renewed)) hold.renewed.push(renewed);
  else hold.renewed = [hold.renewed, renewed];
  return hold;
}

/**
 * Whether the hold a release gives back is renewed by the watchdog: `renewed` when the caller knows (a
 * handle), else the innermost hold's (holds are released innermost first), else true.
 */
export function releasedRenewed(ctx: LockContext, holdKey: string, renewed: boolean | undefined): boolean {
  if (renewed !== undefined) return renewed;
  const flags = ctx.holds.get(holdKey)?.renewed;
  return (Array.isArray(flags) ? flags.at(-1) : flags) ?? true;
}

/**
 * Records one hold fewer (of the kind `renewed`), or forgets the lock when `all`. Returns the record as it
 * was (for its start time), if any.
 */
export function recordReleased(ctx: LockContext, holdKey: string, renewed: boolean, all = false): Hold | undefined {
  const hold = ctx.holds.get(holdKey);
  if (!hold) return undefined;
  const flags = hold.renewed;
  if (Array.isArray(flags)) {
    const i = flags.lastIndexOf(renewed);
    flags.splice(i >= 0 ? i : flags.length - 1, 1);
  }
  if (all || --hold.count <= 0) ctx.holds.delete(holdKey);
  return hold;
}

/** Runs `fn` outside every context, so that timers and listeners it creates do not keep one alive. */
export function outsideContexts<T>(fn: () => T): T {
  return storage.exit(fn);
}
