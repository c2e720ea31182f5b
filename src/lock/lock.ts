import { detachedContext, owningContext, type LockContext } from '../context.js';
import type { Core } from '../core.js';
import { LockAcquireTimeoutError } from '../errors.js';
import { auxName, mainKey } from '../keys.js';
import { checkedRead, type ObjectKind } from '../kinds.js';
import type { MetricKind } from '../observe/kinds.js';
import { WAKE_ONE, type WakeRule } from '../pubsub/channel.js';
import { checkOptions, leaseMillis, optionLease, optionWait, refuseOptionsObject, type TimeUnit } from '../time.js';
import type { RenewalKind, WatchdogHold } from '../watchdog/hold.js';
import { KeyEvents, type LockEvent } from './events.js';
import type { LockHandle } from './handle.js';
import { ACQUIRE_OPTION_KEYS, checkIdentifier, requireLockUnit, tryLockTimes, type AcquireOptions } from './options.js';
import { acquire } from './protocol/acquire.js';
import { acquireForCaller, countedOwner, unlockForCaller } from './protocol/caller.js';
import { handleOf, setLease, takeOver } from './protocol/handle.js';
import { ignore, type Grant, type Refused, type Taken, type Waiter } from './protocol/hooks.js';
import { abandonOwner } from './protocol/undo.js';
import { unlock } from './protocol/unlock.js';
import { waitOnChannel } from './protocol/wait.js';
import { ACQUIRE, FORCE_UNLOCK, RENEW, UNLOCK, type AcquireResult } from './scripts.js';

export { ACQUIRE_OPTION_KEYS, requireLockUnit, tryLockTimes, type AcquireOptions } from './options.js';
export type { Grant, Refused, Taken, Waiter } from './protocol/hooks.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RLock`. */
    lock: true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RLock`. */
    lock: true;
  }
}

/**
 * @internal RLock's steps, for the objects that drive RLocks as members (RMultiLock, RRedLock):
 * they resolve the caller's owner once (outside any context, a new owner per member and call), acquire
 * with an abort signal and get the grant's send time, release by owner, build member handles, set a
 * final lease, and give up an owner the call no longer uses. Not exported from the package.
 */
export interface MemberSteps {
  context(lock: RLock): LockContext;
  /** The call is over and `ctx` holds nothing of `lock` through it: see `abandonOwner` (protocol/undo.ts). */
  abandon(lock: RLock, ctx: LockContext): void;
  acquire(lock: RLock, ctx: LockContext, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Grant | undefined>;
  release(lock: RLock, ctx: LockContext): Promise<void>;
  handle(lock: RLock, ctx: LockContext, grant: Grant, leaseMs: number | undefined): LockHandle;
  setLease(lock: RLock, ctx: LockContext, leaseMs: number): Promise<number | undefined>;
  /** Whether `ctx`'s owner holds `lock` (`HGET`). */
  held(lock: RLock, ctx: LockContext): Promise<boolean>;
  /** The id of the `LockClient` that made the lock. */
  clientId(lock: RLock): string;
  /** That client's `lockWatchdogTimeout` (ms). */
  watchdogLease(lock: RLock): number;
}


/** The renewal kind of every hash-based exclusive lock (RLock, fenced, spin). */
export const LOCK_RENEWAL: RenewalKind = { script: RENEW, keysPerHold: 1 };

// An RLock is the engine's `LockHooks` (src/lock/protocol/hooks.ts): it passes itself to the engine's
// functions, whose parameters check that shape; no `implements`, which would put the internal interface
// in the API reference.
/**
 * A reentrant distributed lock with Redisson's `RLock` semantics.
 *
 * Redis keys: a hash at `keyPrefix + name` (field = owner id `clientId:contextId`, value = hold count;
 * field `kind` = `lock`: a name serves one kind of object at a time, see `ObjectKind`), transient unlock latches `relock:unlock:{name}:<requestId>` (written only by an unlock answered "not held" or one whose owner has a lost grant pending, see `unlockSource`); channel `relock:channel:{name}` (an
 * unlock publishes `0` there; on Redis Cluster with sharded pub/sub). All share the name's hash tag.
 *
 * Ownership inside a context (`runInContext`, `withLock`, a per-request context from middleware), as
 * Redisson's per-thread ownership: the owner is the context that holds the lock or, for a new acquisition,
 * the innermost context, and an owner that takes the lock again reenters (its hold count rises). Concurrent
 * tasks that share one context share that owner: give each task its own context.
 *
 * Outside any context a lock object behaves as a mutex, so that one object shared by concurrent tasks
 * (hoisted to module scope, called from request handlers) still lets one task in at a time: each
 * acquisition is an owner of its own, never reentrant, and waits behind the current holder. relock knows a
 * contextless acquisition's task only through the caller's async context (task-holds.ts): where that tells
 * exactly it acts, where it cannot it refuses with a typed error, never guessing. `unlock()` outside a
 * context releases only the calling task's newest `lock()`/`tryLock()` of this object (waiting for it while
 * in flight); when that holds nothing it throws `IllegalMonitorStateError` (a task whose lease ran out and
 * that unlocks late leaves the next holder alone, as Redisson's owner-checked unlock), and when the task
 * made none (a lock taken in one callback and released in another) `OwnerUnknownError`. A task whose newest
 * acquisition still holds the object and that acquires it again gets `ReentryNeedsContextError` (it would
 * wait for itself). A handle from `acquire()` releases exactly its own hold from anywhere.
 * `getHoldCount()` and `isHeldByCurrentContext()` outside a context count the hold of that newest
 * acquisition. Create lock objects with `LockClient.getLock(name)`; each call returns a new object.
 */
export class RLock {
  /** The Redis key of the lock hash. */
  readonly key: string;
  /** The channel name once made (see `channel`). */
  private channelName: string | undefined;
  /** The kind of lock, kept in its hash's `kind` field and checked by every acquisition; each variant has its own. */
  protected readonly kind: ObjectKind = 'lock';
  /** @internal Hook (see `LockHooks`): how the watchdog renews this lock's holds and `setLease` sets a lease, the owner-checked `PEXPIRE` of its key (the non-reentrant lock checks a string instead of a hash field). */
  readonly renewal: RenewalKind = LOCK_RENEWAL;
  /** @internal Hook: how metrics and events name this lock's kind (the `relock.kind` attribute); each variant has its own. */
  readonly metricKind: MetricKind = 'lock';
  /** @internal Hook: this lock's entry in a context's holds (`clientId + ' ' + key`; the read and write locks of one read-write lock differ). */
  readonly holdKey: string;
  /** The part of this lock's unlock latch keys that every unlock shares, once made (see `latchPrefix`). */
  private latchKeys: string | undefined;
  /** The hold of this lock's last watchdog acquisition, for `registerHold` to reuse. */
  private spareHold: WatchdogHold | undefined;
  /** Listeners of the lock's key events (`addListener`), made on first use. */
  private events: KeyEvents | undefined;
  private expected: { key: string; kind: ObjectKind } | undefined;

  /** @internal Use `LockClient.getLock(name)`. */
  constructor(
    /** @internal The client's shared state (connection, executor, watchdog, observer). */
    readonly core: Core,
    /** The name given to `getLock()`. */
    readonly name: string,
  ) {
    this.key = mainKey(core.keyPrefix, name);
    this.holdKey = `${core.id} ${this.key}`;
  }

  /**
   * The channel unlocks are published on (`relock:channel:{name}`). Made on first use, as the latch
   * prefix: a lock object that is held and not yet released keeps neither string (issue 12: heap per held lock).
   */
  get channel(): string {
    return (this.channelName ??= auxName(this.core.keyPrefix, 'channel', this.key));
  }

  /** @internal Hook: the part of this lock's unlock latch keys that every unlock shares (see `UnlockLatches.prefix`), made on first use. */
  get latchPrefix(): string {
    return (this.latchKeys ??= this.core.latches.prefix(this.key));
  }

  /** The name given to `getLock()` (Redisson's `getName()`). */
  getName(): string {
    return this.name;
  }

  /**
   * Acquires the lock, waiting as long as it takes (Redisson's `RLock.lock()` / `lock(leaseTime, unit)`).
   * Without `leaseTime` the lock lives `lockWatchdogTimeout` and the watchdog renews it until unlocked;
   * with it, the lock expires `leaseTime` after the acquisition and is not renewed. Reentrant inside a
   * context: the owner's hold count rises by one, and the lock's TTL is raised to this acquisition's lease
   * when it is shorter, never lowered (Redisson resets it to the inner lease, which can cut an outer hold
   * short). Outside any context it is not reentrant (see the class description): called again by a task
   * whose newest acquisition of the object holds it, it throws `ReentryNeedsContextError` at once (nothing
   * sent). Resolves once held. Throws `InvalidArgumentError` (bad time or unit),
   * `WrongTypeError` (the key holds another type, or another kind of relock object holds the name),
   * `RedisUnavailableError`, `ClientClosedError`.
   */
  lock(leaseTime?: number, unit?: TimeUnit): Promise<void> {
    // Not an async method: the call's promise is the acquisition's, less its value (no async frame).
    let lease: number | undefined;
    try {
      refuseOptionsObject(leaseTime, 'leaseTime', 'lock(5, "seconds")', 'acquire(options)');
      lease = leaseTime === undefined ? undefined : leaseMillis(leaseTime, requireLockUnit(unit));
    } catch (error) {
      return Promise.reject(error);
    }
    return acquireForCaller(this, Infinity, lease, undefined).then(ignore);
  }

  /**
   * Tries to acquire the lock (Redisson's `RLock.tryLock`): `tryLock()` makes exactly one attempt;
   * `tryLock(waitTime, unit)` waits up to `waitTime` with the watchdog; `tryLock(waitTime, leaseTime,
   * unit)` waits up to `waitTime` and holds for `leaseTime` without the watchdog (`-1` = watchdog).
   * A wait time <= 0 (such as `-1`) makes exactly one attempt, as in Redisson; to wait until the lock is
   * free use `lock()` or `acquire()` without a wait time (`Infinity` also waits without limit). Waiting is woken by the unlock message, with a timer on
   * the holder's TTL as fallback. Resolves to true when acquired, false when the lock stayed busy (outside
   * any context, `ReentryNeedsContextError` when the calling task already holds it: see the class description).
   * Throws `InvalidArgumentError`, `WrongTypeError`, `RedisUnavailableError` (Redis unreachable for
   * the whole wait or the retry policy; when its reply was lost, the grant is adopted by the owner's next
   * acquisition, or released in the background once Redis answers again for an owner outside any context),
   * `ClientClosedError`.
   */
  tryLock(): Promise<boolean>;
  tryLock(waitTime: number, unit: TimeUnit): Promise<boolean>;
  tryLock(waitTime: number, leaseTime: number, unit: TimeUnit): Promise<boolean>;
  tryLock(waitTime?: number, leaseOrUnit?: number | TimeUnit, unit?: TimeUnit): Promise<boolean> {
    // Not an async method, as `lock`.
    let times: [number, number | undefined];
    try {
      times = tryLockTimes(waitTime, leaseOrUnit, unit);
    } catch (error) {
      return Promise.reject(error);
    }
    return acquireForCaller(this, times[0], times[1], undefined).then(granted);
  }

  /**
   * Acquires the lock and returns a handle that releases it (`release()` or `await using`), with an
   * `AbortSignal` that aborts when the lock is lost. Without a wait time it waits until the lock is free
   * (unlike `tryLock()`, which makes one attempt); without a lease the watchdog renews it. Throws
   * `LockAcquireTimeoutError` when the wait time runs out, `options.signal.reason` when aborted,
   * `InvalidArgumentError` for options that break the rules of `AcquireOptions` (such as a `leaseTime`
   * without `unit`), and the errors of `tryLock`.
   */
  async acquire(options: AcquireOptions = {}): Promise<LockHandle> {
    checkOptions(options, ACQUIRE_OPTION_KEYS);
    const wait = optionWait(options);
    const lease = optionLease(options);
    const owner = checkIdentifier(options, this.kind);
    options.signal?.throwIfAborted();
    if (options.acquiredExternally) return takeOver(this, detachedContext(owner), lease);
    const taken = await acquireForCaller(this, wait, lease, options.signal, owner === undefined ? undefined : detachedContext(owner), true);
    if (!taken) throw new LockAcquireTimeoutError(this.name, wait);
    return handleOf(this, taken.ctx, taken.grant, lease);
  }

  /**
   * Releases one hold of the caller (Redisson's `RLock.unlock()`): the hold count drops by one, and at
   * zero the lock is deleted and waiters are woken. The watchdog stops renewing at once, before Redis
   * answers. A retry after a lost reply replays the first answer (a guard on the hold count this client
   * knows; see `unlockSource`): one request, and no key but the lock's written, when nothing fails. Inside a context it
   * releases the context's hold; outside any context, the hold of the calling task's newest `lock()`/`tryLock()`
   * of this object (waited for while in flight), and nothing else (see the class description). Throws
   * `OwnerUnknownError` outside a context when the task made no such acquisition (nothing is sent),
   * `IllegalMonitorStateError` when the caller does not hold the lock
   * (including after its lease expired: a new holder's lock is left alone; a hold renewed by the watchdog
   * that is found gone this way is also reported by `lockLost`), `RedisUnavailableError`,
   * `ClientClosedError`.
   */
  unlock(): Promise<void> {
    return unlockForCaller(this);
  }

  /**
   * Deletes the lock whoever holds it and wakes waiters (Redisson's `forceUnlock`; `DEL` of the lock key and
   * a `0` published on its channel, nothing for a spin lock). Resolves to true when a lock was deleted.
   * Holders are not told, except a watchdog holder through its next renewal (`lockLost`, reason
   * `'expired'`); this client's own renewals of the lock stop at once. A key that holds another type
   * (application data) or belongs to another kind of relock object is left alone. Throws
   * `WrongTypeError` (then), `RedisUnavailableError`, `ClientClosedError`.
   */
  async forceUnlock(): Promise<boolean> {
    this.core.checkOpen();
    this.core.watchdog.forget(this.key);
    return this.core.executor.run('forceUnlock', () => this.runForceUnlock(), { idempotent: true, expects: this.expects });
  }

  /** Runs the force-unlock script once: true when a lock was deleted. The fair lock overrides it. */
  protected runForceUnlock(): Promise<boolean> {
    return FORCE_UNLOCK.run(this.core.connection, { lock: this.key, channel: this.releaseChannel(), publishCommand: this.core.connection.publishCommand, kind: this.kind });
  }

  /**
   * Calls `listener(name)` when the lock's key expires (`'expired'`: the last holder's lease ran out, or a
   * crashed holder's watchdog lease) or is deleted (`'deleted'`: the last unlock, `forceUnlock`), in any
   * process (Redisson's `addListener` with an `ExpiredObjectListener` / `DeletedObjectListener`). Observed
   * through Redis keyspace notifications (channel `__keyspace@<db>__:<key>`, messages `expired` / `del`),
   * which must be enabled: `notify-keyspace-events` with `K` and `x` (expired) or `g` (deleted), e.g.
   * `CONFIG SET notify-keyspace-events Kgx`. Checked here (`CONFIG GET`, `CLIENT INFO`), then subscribed;
   * resolves to an id for `removeListener`. Delivery is at most once (pub/sub: a message sent while this
   * client reconnects is lost). Throws `KeyspaceEventsUnavailableError` (notifications disabled, `CONFIG`
   * refused, Redis Cluster), `InvalidArgumentError` (unknown event, a listener that is not a function),
   * `RedisUnavailableError`, `ClientClosedError`. Without notifications, holders learn of a lost lock
   * from their handle's `signal` and the client's `lockLost` event.
   */
  addListener(event: LockEvent, listener: (name: string) => void): Promise<number> {
    this.events ??= new KeyEvents(this.core, this.key, this.name);
    return this.events.add(event, listener);
  }

  /** Removes a listener added by `addListener` (unsubscribes its channel when it was the last); an unknown id does nothing. */
  async removeListener(id: number): Promise<void> {
    await this.events?.remove(id);
  }

  /** Whether anyone holds the lock (`EXISTS` on its key). Throws `RedisUnavailableError`, `ClientClosedError`. */
  async isLocked(): Promise<boolean> {
    return Number(await this.read(['EXISTS', this.key])) === 1;
  }

  /**
   * Whether the caller's owner holds the lock (Redisson's `isHeldByCurrentThread`): `getHoldCount() > 0`. Throws `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async isHeldByCurrentContext(): Promise<boolean> {
    return (await this.getHoldCount()) > 0;
  }

  /**
   * The caller's hold count (`HGET`), 0 when it does not hold the lock; outside any context, the hold of the
   * calling task's newest `lock()`/`tryLock()` of this object (0 or 1; 0 when it made none). Throws
   * `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async getHoldCount(): Promise<number> {
    return this.holdCount(countedOwner(this));
  }

  /** @internal The hold count of `ctx`'s owner in Redis (`HGET`); the non-reentrant lock reads its string. */
  async holdCount(ctx: LockContext): Promise<number> {
    return Number((await this.read(['HGET', this.key, this.ownerOf(ctx)])) ?? 0);
  }

  /**
   * Milliseconds until the lock expires (`PTTL`): -2 when it is not held, -1 when the key has no expiry
   * (not set by relock). Throws `RedisUnavailableError`, `ClientClosedError`.
   */
  async remainTimeToLive(): Promise<number> {
    return Number(await this.read(['PTTL', this.key]));
  }

  /**
   * @internal Hook: the context that owns (or would own) this lock for the caller: the nearest one up the
   * caller's chain that holds it, else the innermost; undefined outside any context.
   */
  context(): LockContext | undefined {
    return owningContext(this.holdKey);
  }

  /** @internal Hook: the owner id of `ctx` in Redis (`clientId:contextId`, or the caller's `identifier`). */
  ownerOf(ctx: LockContext): string {
    return ctx.owner ?? `${this.core.id}:${ctx.id}`;
  }

  /** @internal Hook: runs the acquire script once for this lock's `kind` (see `LockHooks.runAcquire`); the fenced lock's takes a token too. */
  runAcquire(owner: string, lease: string, guard: string, held: string): Promise<AcquireResult> {
    const values = acquireValues;
    values.lock = this.key;
    values.leaseMs = lease;
    values.owner = owner;
    values.guard = guard;
    values.heldCount = held;
    values.kind = this.kind;
    return ACQUIRE.run(this.core.connection, values);
  }

  /**
   * @internal Hook: runs the unlock script once (`attempt` > 1: a retry, which replays the first answer;
   * `guard`: see `unlockSource`): nil when `owner` does not hold the lock, 0 when holds remain, 1 when released.
   */
  runUnlock(owner: string, latch: string, attempt: number, guard: string): Promise<number | null> {
    const { connection, latches } = this.core;
    const channel = this.releaseChannel();
    const values = unlockValues;
    values.lock = this.key;
    values.latch = latch;
    values.owner = owner;
    values.channel = channel;
    values.publishCommand = connection.publishCommand;
    values.latchTtl = latches.ttlArg;
    values.retry = attempt > 1 ? '1' : '0';
    values.guard = guard;
    return UNLOCK.run(connection, values);
  }

  /** The channel a release that frees the lock publishes on; the spin lock returns '' (publish nothing). */
  protected releaseChannel(): string {
    return this.channel;
  }

  /**
   * @internal Hook: registers `owner`'s hold with the watchdog before its acquire is sent, reusing this
   * lock's previous hold record when it is free (see `Watchdog.register`); the read-write lock renews its own way.
   */
  registerHold(owner: string): WatchdogHold {
    const hold = this.core.watchdog.register(this.renewal, this.name, this.key, owner, undefined, this.spareHold);
    this.spareHold = hold;
    return hold;
  }

  /** @internal Hook: the channel a waiter for `owner` listens on (the fair lock: the owner's own), or undefined when this lock waits without pub/sub (the spin lock). */
  waitChannel(_owner: string): string | undefined {
    return this.channel;
  }

  /** @internal Hook: how many local waiters one message on the wait channel wakes. */
  readonly wakeRule: WakeRule = WAKE_ONE;

  /**
   * @internal Hook: waits after `waiter`'s first attempt found the lock busy (`first`): pub/sub on
   * `waitChannel`, woken by `wakeRule`, with a timer on the holder's TTL (see `waitOnChannel`). The spin
   * lock overrides it with backoff polling. Resolves to the grant, or undefined when the wait time ran out.
   */
  waitAfter(waiter: Waiter, first: Refused): Promise<Grant | undefined> {
    return waitOnChannel(this, waiter, first);
  }

  /** @internal Hook: called before the first attempt of a call of `owner` that may wait `waitMs` (the fair lock joins its queue bookkeeping). */
  beginWait(_owner: string, _waitMs: number): void {}

  /**
   * @internal Hook: called when that call ends (`granted` or not); a returned promise is awaited before a
   * call without the lock resolves (the fair lock leaves its queue), not after an error.
   */
  endWait(_owner: string, _waitMs: number, _granted: boolean): Promise<void> | undefined {
    return undefined;
  }

  /**
   * @internal Hook: sets the lock's TTL to `leaseMs` if `ctx`'s owner holds it (see `setLease` in
   * protocol/handle.ts): the send time (monotonic ms), or `undefined` when the owner no longer holds it.
   */
  setLease(ctx: LockContext, leaseMs: number): Promise<number | undefined> {
    return setLease(this, ctx, leaseMs);
  }

  /** @internal Hook: whether a handle's `extend()` may set a new lease with `setLease` (every lock whose holds are fields of its hash). */
  readonly extendable: boolean = true;

  /** @internal Hook: what a WRONGTYPE reply on this lock's key is reported as (made once: it is passed with every call). */
  get expects(): { key: string; kind: ObjectKind } {
    return (this.expected ??= { key: this.key, kind: this.kind });
  }

  /** Sends the read `args` of this lock's key, kind-checked (`checkedRead`: another kind's key or other data throws `WrongTypeError`). */
  private read(args: string[]): Promise<unknown> {
    this.core.checkOpen();
    const expects = this.expects;
    return this.core.executor.run(args[0], () => checkedRead(this.core.connection, expects, args), { idempotent: true, expects });
  }
}

/** The named values of a script call, writable. */
type Filled<V> = { -readonly [N in keyof V]: V[N] };

/**
 * The values of every call of RLock's acquire and unlock scripts, one object each, filled before each
 * call: `run` reads them at once and keeps none (see `TypedScript.run`), so no object is made per call.
 */
const acquireValues: Filled<Parameters<typeof ACQUIRE.run>[1]> = { lock: '', leaseMs: '', owner: '', guard: '', heldCount: '', kind: '' };
const unlockValues: Filled<Parameters<typeof UNLOCK.run>[1]> = { lock: '', latch: '', owner: '', channel: '', publishCommand: '', latchTtl: '', retry: '', guard: '' };

/** Whether an acquisition call got the lock (`tryLock`'s answer). */
const granted = (taken: Taken | undefined): boolean => taken !== undefined;

/** @internal RLock's steps for the objects that drive RLocks as members (see `MemberSteps`). */
export const memberSteps: MemberSteps = {
  // The owner of a new acquisition by the caller: its context, or outside any context a new one.
  context: (lock) => lock.context() ?? detachedContext(),
  abandon: (lock, ctx) => abandonOwner(lock, ctx),
  acquire: (lock, ctx, waitMs, leaseMs, signal) => acquire(lock, ctx, waitMs, leaseMs, signal).then((taken) => taken?.grant),
  release: (lock, ctx) => unlock(lock, ctx),
  handle: (lock, ctx, grant, leaseMs) => handleOf(lock, ctx, grant, leaseMs),
  setLease: (lock, ctx, leaseMs) => lock.setLease(ctx, leaseMs),
  held: (lock, ctx) => lock.holdCount(ctx).then((count) => count > 0),
  clientId: (lock) => lock.core.id,
  watchdogLease: (lock) => lock.core.watchdog.leaseMs,
};
