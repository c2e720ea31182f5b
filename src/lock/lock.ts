import { pause } from '../backoff.js';
import { noteTaskHold, taskHolds } from '../task-holds.js';
import { allLanded, detachedContext, landed, owningContext, recordAcquired, recordReleased, releasedRenewed, takeOff, type Hold, type LockContext, type Unsettled } from '../context.js';
import type { Core } from '../core.js';
import { ClientClosedError, IllegalMonitorStateError, InvalidArgumentError, LockAcquireTimeoutError, LockLostError, RedisUnavailableError } from '../errors.js';
import { auxName, mainKey } from '../keys.js';
import type { ObjectKind } from '../kinds.js';
import type { MetricKind } from '../observe/kinds.js';
import { probed, type AcquireProbe } from '../observe/observer.js';
import { WAKE_ONE, type WakeRule } from '../pubsub/channel.js';
import { clientWait, type Attempt } from '../pubsub/wait.js';
import { checkOptions, leaseMillis, monotonic, optionLease, optionWait, refuseOptionsObject, requireUnit, waitMillis, type TimeUnit } from '../time.js';
import type { RunOptions } from '../redis/executor.js';
import { HoldSignal, type RenewalKind, type WatchdogHold } from '../watchdog/hold.js';
import { KeyEvents, type LockEvent } from './events.js';
import { LockHandle } from './handle.js';
import { ACQUIRE, FORCE_UNLOCK, RENEW, UNLOCK, type AcquireResult } from './scripts.js';

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
 * @internal RLock's protected steps, for the objects that drive RLocks as members (RMultiLock, RRedLock):
 * they resolve the caller's owner once (outside any context, a new owner per member and call), acquire
 * with an abort signal and get the grant's send time, release by owner, build member handles, set a
 * final lease, and give up an owner the call no longer uses. Not exported from the package.
 */
export interface MemberSteps {
  context(lock: RLock): LockContext;
  /** The call is over and `ctx` holds nothing of `lock` through it: see `RLock.abandonOwner`. */
  abandon(lock: RLock, ctx: LockContext): void;
  acquire(lock: RLock, ctx: LockContext, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Grant | undefined>;
  release(lock: RLock, ctx: LockContext): Promise<void>;
  handle(lock: RLock, ctx: LockContext, grant: Grant, leaseMs: number | undefined): LockHandle;
  setLease(lock: RLock, ctx: LockContext, leaseMs: number): Promise<number | undefined>;
  /** The id of the `LockClient` that made the lock. */
  clientId(lock: RLock): string;
  /** That client's `lockWatchdogTimeout` (ms). */
  watchdogLease(lock: RLock): number;
}

/** @internal Set by `RLock`'s static block (only the class body may call its protected methods). */
export let memberSteps: MemberSteps;

/**
 * Options of `acquire()` and `LockClient.withLock()`. Give each time in milliseconds (`waitMs`,
 * `leaseMs`) or with its unit (`waitTime`/`leaseTime` and `unit`): `{ leaseMs: 5000 }` and
 * `{ leaseTime: 5, unit: 'seconds' }` are the same lease; `{ leaseTime: 5 }` alone is refused.
 */
export interface AcquireOptions {
  /**
   * How long to wait for the lock, in milliseconds: 0 for one attempt; omitted or `Infinity` to wait until
   * it is free. Negative values throw `InvalidArgumentError` (`tryLock(-1, …)`, Redisson's form, makes one attempt).
   */
  waitMs?: number;
  /**
   * Lease in milliseconds: the lock expires this long after the acquisition (counted from when the
   * granting attempt was sent), whatever its holder does. Omitted or -1: the watchdog renews it while held.
   */
  leaseMs?: number;
  /** `waitMs` in `unit` (required with it), as Redisson's `tryLock(waitTime, leaseTime, unit)`. Not together with `waitMs`. */
  waitTime?: number;
  /** `leaseMs` in `unit` (required with it). Not together with `leaseMs`. */
  leaseTime?: number;
  /** Unit of `waitTime` and `leaseTime`; required with them, refused without them. */
  unit?: TimeUnit;
  /** Aborts the wait; the promise then rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * The owner id written in Redis for this hold instead of `clientId:contextId` (redis-semaphore's
   * `identifier`): a non-empty string of at most 200 characters, other than `kind` and `mode`. Pass it to
   * another process so that it can take the hold over (`acquiredExternally`). Unique per hold: two
   * acquisitions with one identifier are one owner (the second reenters). Not for read-write locks.
   */
  identifier?: string;
  /**
   * With `identifier` (redis-semaphore's `acquiredExternally`): the lock is already held under that
   * identifier, by another process that hands it over. Nothing is acquired: the hold is checked in Redis
   * and given this call's lease (or the watchdog's, then renewed by this client), and the handle releases
   * it. Throws `LockLostError` (reason `'expired'`) when that identifier holds no lock. The process that
   * acquired it should then call `handle.stopRefresh()`.
   */
  acquiredExternally?: boolean;
}

/** Field names of lock hashes that are not owners. */
const RESERVED_FIELDS = new Set(['kind', 'mode']);

/**
 * One acquisition call in progress, and its guard against lost replies: `before` is the owner's hold
 * count before it; once an attempt failed ambiguously (or an earlier call of the owner left the lock
 * unsettled, see `LockContext.unsettled`), attempts ask the script not to add a second hold.
 */
interface Acquisition {
  readonly ctx: LockContext;
  readonly owner: string;
  /** Lease in ms (the watchdog's when none was given). */
  readonly lease: number;
  /** The owner's hold record before the call, if any. */
  readonly hold: Hold | undefined;
  /** Its count, sent with every attempt; 0 once Redis answered that those holds had ended (see `holdEnded`). */
  before: number;
  armed: boolean;
  /** Attempts sent. */
  sent: number;
  /** Monotonic send time of the latest attempt. */
  sentAt: number;
  /** An attempt is in flight and counted in `ctx.flights` (context owners only). */
  flying: boolean;
  /** The call is over: replies of attempts it gave up on no longer say anything about it. */
  done: boolean;
}

/** A hold of one contextless acquisition of a lock object, not yet released. */
interface Contextless {
  /** Its owner: a detached context of its own. */
  readonly ctx: LockContext;
  /** Monotonic ms after which its lease has ended; Infinity while the watchdog renews it. */
  readonly until: number;
  /** An `unlock()` is releasing it. */
  releasing: boolean;
}

/** First and longest pause (ms) between tries of a compensating release while Redis is unreachable. */
const UNDO_RETRY_MS = 100;
const UNDO_RETRY_CAP_MS = 2000;

/** What an acquisition attempt got: the send time of the granting attempt (its lease counts from there). */
export interface Grant {
  readonly sentAt: number;
  readonly token?: bigint | undefined;
}

/** The renewal kind of every hash-based exclusive lock (RLock, fenced, spin). */
export const LOCK_RENEWAL: RenewalKind = { script: RENEW, keysPerHold: 1 };


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
 * acquisition is an owner of its own, never reentrant (the same object locked twice in a row waits for
 * itself, as any mutex; `tryLock(w)` then returns false after `w`), and waits behind the current holder.
 * `unlock()` outside a context releases the hold the calling task acquired on this object (its async
 * context remembers its own contextless acquisitions, see task-holds.ts): a task whose hold was lost (its
 * lease ran out, another task got the lock) and that unlocks late gets `IllegalMonitorStateError` and
 * leaves the next holder alone, as Redisson's owner-checked unlock. A task that made no acquisition of
 * the object (a lock taken in one callback and released in another) releases the object's current
 * contextless holder (for a read lock, its oldest contextless read hold). A handle from `acquire()`
 * releases exactly its own hold from anywhere. `getHoldCount()` and `isHeldByCurrentContext()` outside a context
 * count this object's contextless holds still in Redis. Create lock objects with `LockClient.getLock(name)`;
 * each call returns a new object.
 */
export class RLock {
  /** The Redis key of the lock hash. */
  readonly key: string;
  /** The channel unlocks are published on. */
  readonly channel: string;
  /** This object's contextless holds not yet released, oldest first (see the class description). */
  private contextless: Contextless[] = [];
  /** A grant to a new owner proves every other owner's hold gone (every lock but the read lock). */
  protected readonly exclusive: boolean = true;
  /** The kind of lock, kept in its hash's `kind` field and checked by every acquisition; each variant has its own. */
  protected readonly kind: ObjectKind = 'lock';
  /** How metrics and events name this lock's kind (the `relock.kind` attribute); each variant has its own. */
  protected readonly metricKind: MetricKind = 'lock';
  /** This lock's entry in a context's holds (`clientId + ' ' + key`; the read and write locks of one read-write lock differ). */
  protected readonly holdKey: string;
  private readonly latchPrefix: string;
  /** The hold of this lock's last watchdog acquisition, for `registerHold` to reuse. */
  private spareHold: WatchdogHold | undefined;
  /** The keys the renewal script gets for a hold of this lock (see `Watchdog.register`), made on first use. */
  private renewalKeys: readonly string[] | undefined;
  /** Listeners of the lock's key events (`addListener`), made on first use. */
  private events: KeyEvents | undefined;
  private expected: { key: string; kind: ObjectKind } | undefined;
  private unlockRun: RunOptions<number | null> | undefined;

  static {
    memberSteps = {
      context: (lock) => lock.acquiringContext(),
      abandon: (lock, ctx) => lock.abandonOwner(ctx),
      acquire: (lock, ctx, waitMs, leaseMs, signal) => lock.acquireAs(ctx, waitMs, leaseMs, signal),
      release: (lock, ctx) => lock.unlockAs(ctx),
      handle: (lock, ctx, grant, leaseMs) => lock.handle(ctx, grant, leaseMs),
      setLease: (lock, ctx, leaseMs) => lock.setLease(ctx, leaseMs),
      clientId: (lock) => lock.core.id,
      watchdogLease: (lock) => lock.core.watchdog.leaseMs,
    };
  }

  /** @internal Use `LockClient.getLock(name)`. */
  constructor(
    protected readonly core: Core,
    /** The name given to `getLock()`. */
    readonly name: string,
  ) {
    this.key = mainKey(core.keyPrefix, name);
    this.channel = auxName(core.keyPrefix, 'channel', this.key);
    this.holdKey = `${core.id} ${this.key}`;
    this.latchPrefix = core.latches.prefix(this.key);
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
   * short). Outside any context it is not reentrant (see the class description): called twice on one
   * object without an unlock in between, the second call waits for the first hold (a self-deadlock, as
   * with any mutex). Resolves once held. Throws `InvalidArgumentError` (bad time or unit),
   * `WrongTypeError` (the key holds another type, or another kind of relock object holds the name),
   * `RedisUnavailableError`, `ClientClosedError`.
   */
  async lock(leaseTime?: number, unit?: TimeUnit): Promise<void> {
    refuseOptionsObject(leaseTime, 'leaseTime', 'lock(5, "seconds")', 'acquire(options)');
    const lease = leaseTime === undefined ? undefined : leaseMillis(leaseTime, requireLockUnit(unit));
    await this.acquireForCaller(Infinity, lease, undefined);
  }

  /**
   * Tries to acquire the lock (Redisson's `RLock.tryLock`): `tryLock()` makes exactly one attempt;
   * `tryLock(waitTime, unit)` waits up to `waitTime` with the watchdog; `tryLock(waitTime, leaseTime,
   * unit)` waits up to `waitTime` and holds for `leaseTime` without the watchdog (`-1` = watchdog).
   * A wait time <= 0 (such as `-1`) makes exactly one attempt, as in Redisson; to wait until the lock is
   * free use `lock()` or `acquire()` without a wait time (`Infinity` also waits without limit). Waiting is woken by the unlock message, with a timer on
   * the holder's TTL as fallback. Resolves to true when acquired, false when the lock stayed busy (outside
   * any context, also when this object already holds it: see the class description).
   * Throws `InvalidArgumentError`, `WrongTypeError`, `RedisUnavailableError` (Redis unreachable for
   * the whole wait or the retry policy; when its reply was lost, the grant is adopted by the owner's next
   * acquisition, or released in the background once Redis answers again for an owner outside any context),
   * `ClientClosedError`.
   */
  tryLock(): Promise<boolean>;
  tryLock(waitTime: number, unit: TimeUnit): Promise<boolean>;
  tryLock(waitTime: number, leaseTime: number, unit: TimeUnit): Promise<boolean>;
  async tryLock(waitTime?: number, leaseOrUnit?: number | TimeUnit, unit?: TimeUnit): Promise<boolean> {
    const [wait, lease] = tryLockTimes(waitTime, leaseOrUnit, unit);
    return (await this.acquireForCaller(wait, lease, undefined)) !== undefined;
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
    checkOptions(options);
    const wait = optionWait(options);
    const lease = optionLease(options);
    const owner = this.checkIdentifier(options);
    options.signal?.throwIfAborted();
    if (options.acquiredExternally) return this.takeOver(detachedContext(owner), lease);
    const taken = await this.acquireForCaller(wait, lease, options.signal, owner === undefined ? undefined : detachedContext(owner));
    if (!taken) throw new LockAcquireTimeoutError(this.name, wait);
    return this.handle(taken.ctx, taken.grant, lease);
  }

  /**
   * Releases one hold of the caller (Redisson's `RLock.unlock()`): the hold count drops by one, and at
   * zero the lock is deleted and waiters are woken. The watchdog stops renewing at once, before Redis
   * answers. A retry after a lost reply replays the first answer (a guard on the hold count this client
   * knows; see `unlockSource`): one request, and no key but the lock's written, when nothing fails. Inside a context it
   * releases the context's hold; outside any context, the calling task's own hold of this object, or when
   * the task made no acquisition of it, this object's current contextless holder's (see the class
   * description). Throws `IllegalMonitorStateError` when the caller does not hold the lock
   * (including after its lease expired: a new holder's lock is left alone; a hold renewed by the watchdog
   * that is found gone this way is also reported by `lockLost`), `RedisUnavailableError`,
   * `ClientClosedError`.
   */
  async unlock(): Promise<void> {
    const ctx = this.context();
    if (ctx) return this.unlockAs(ctx);
    const own = taskHolds(this);
    // No hold, or the task's own acquisitions hold nothing (yet, or any more: a lease ran out and another task
    // was granted the lock): an owner that holds nothing leaves the current holder alone and throws
    // IllegalMonitorStateError.
    const held = this.releasable(own);
    if (!held) return this.unlockAs(detachedContext());
    held.releasing = true;
    try {
      await this.unlockAs(held.ctx);
    } finally {
      held.releasing = false;
    }
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
   * Whether the caller's owner holds the lock (`HEXISTS`; Redisson's `isHeldByCurrentThread`); outside any
   * context, whether one of this object's contextless acquisitions still holds it (`HMGET`; see the class
   * description). Throws `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async isHeldByCurrentContext(): Promise<boolean> {
    return (await this.getHoldCount()) > 0;
  }

  /**
   * The caller's hold count (`HGET`), 0 when it does not hold the lock; outside any context, the holds of
   * this object's contextless acquisitions still in Redis (`HMGET`: 0 or 1, except for a read lock). Throws
   * `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async getHoldCount(): Promise<number> {
    const ctx = this.context();
    if (ctx) return Number((await this.read(['HGET', this.key, this.ownerOf(ctx)])) ?? 0);
    const owners = (this.contextless.length > 0 ? this.contextless.map((c) => c.ctx) : [detachedContext()]).map((c) => this.ownerOf(c));
    const counts = (await this.read(['HMGET', this.key, ...owners])) as Array<string | null>;
    return counts.reduce((sum, count) => sum + Number(count ?? 0), 0);
  }

  /**
   * Milliseconds until the lock expires (`PTTL`): -2 when it is not held, -1 when the key has no expiry
   * (not set by relock). Throws `RedisUnavailableError`, `ClientClosedError`.
   */
  async remainTimeToLive(): Promise<number> {
    return Number(await this.read(['PTTL', this.key]));
  }

  /**
   * The context that owns (or would own) this lock for the caller: the nearest one up the caller's chain
   * that holds it, else the innermost; undefined outside any context.
   */
  protected context(): LockContext | undefined {
    return owningContext(this.holdKey);
  }

  /** The owner of a new acquisition by the caller: its context, or outside any context a new one. */
  protected acquiringContext(): LockContext {
    return this.context() ?? detachedContext();
  }

  /**
   * Acquires for the caller (`acquiringContext`): resolves to the owner and the grant, or undefined when
   * the wait ran out. An owner made for this call alone is abandoned when it got nothing.
   */
  protected async acquireForCaller(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, owner?: LockContext): Promise<{ ctx: LockContext; grant: Grant } | undefined> {
    const ctx = owner ?? this.acquiringContext();
    // A contextless call notes its owner in the caller's task, for that task's unlock() (see task-holds.ts).
    const note = owner === undefined && ctx.detached ? noteTaskHold(this, ctx) : undefined;
    let grant: Grant | undefined;
    try {
      grant = await this.acquireAs(ctx, waitMs, leaseMs, signal);
    } finally {
      if (note) note.done = true;
      if (!grant) this.abandonOwner(ctx);
    }
    return grant && { ctx, grant };
  }

  /**
   * `ctx` will make no more acquisitions of this lock. When it is a detached owner (one contextless call,
   * or one member of a group call) whose attempt's reply was lost, so that Redis may hold a grant nobody
   * knows of, that grant is released in the background, retried until Redis answers or its lease ends.
   * A context owner keeps its unsettled mark instead: its next acquisition adopts the grant.
   */
  protected abandonOwner(ctx: LockContext): void {
    const mark = ctx.detached ? ctx.unsettled?.get(this.holdKey) : undefined;
    if (!mark) return;
    ctx.unsettled!.delete(this.holdKey);
    if (mark.until > monotonic()) void this.undo(this.ownerOf(ctx), mark.until);
  }

  protected ownerOf(ctx: LockContext): string {
    return ctx.owner ?? `${this.core.id}:${ctx.id}`;
  }

  /** The `identifier` of acquire options, checked (see `AcquireOptions`); undefined when none is given. */
  private checkIdentifier(options: AcquireOptions): string | undefined {
    const { identifier, acquiredExternally } = options;
    if (acquiredExternally !== undefined && typeof acquiredExternally !== 'boolean') throw new InvalidArgumentError('acquiredExternally', 'must be a boolean');
    if (identifier === undefined) {
      if (acquiredExternally) throw new InvalidArgumentError('acquiredExternally', 'needs the identifier the lock was acquired with: acquire({ identifier, acquiredExternally: true })');
      return undefined;
    }
    if (typeof identifier !== 'string' || identifier === '' || identifier.length > 200 || RESERVED_FIELDS.has(identifier)) {
      throw new InvalidArgumentError('identifier', 'must be a non-empty string of at most 200 characters, other than "kind" and "mode"');
    }
    if (this.kind === 'read-write-lock') throw new InvalidArgumentError('identifier', 'is not supported by read-write locks');
    return identifier;
  }

  /**
   * Takes over a hold that `ctx`'s caller-given owner already has in Redis (`acquiredExternally`): sets its
   * lease (the watchdog's when none is given, then renewed by this client) with the owner-checked renewal
   * script, records one hold and returns its handle. Throws `LockLostError` when the owner holds nothing.
   */
  private async takeOver(ctx: LockContext, leaseMs: number | undefined): Promise<LockHandle> {
    const owner = this.ownerOf(ctx);
    const hold = leaseMs === undefined ? this.registerHold(owner) : undefined;
    let sentAt: number | undefined;
    try {
      sentAt = await this.setLease(ctx, leaseMs ?? this.core.watchdog.leaseMs);
    } finally {
      if (sentAt === undefined) hold?.abandon();
    }
    if (sentAt === undefined) throw new LockLostError(this.name, 'expired', { cause: new Error(`no hold of "${owner}" to take over`) });
    hold?.confirm(sentAt);
    recordAcquired(ctx, this.holdKey, leaseMs === undefined, monotonic());
    this.remember(ctx, leaseMs === undefined ? Infinity : sentAt + leaseMs);
    return this.handle(ctx, { sentAt }, leaseMs);
  }

  /**
   * One acquisition attempt, with retries of transient failures and the guard against lost replies. While
   * it is in flight, unlocks of the owner wait (`ctx.flights`); a granting attempt stays in flight until
   * `acquireAs` has recorded the hold. An ambiguous failure marks the lock unsettled for the owner (the
   * grant may be in Redis); a definite answer of the latest attempt settles it.
   */
  private async attempt(acq: Acquisition, deadline: number | undefined, signal: AbortSignal | undefined): Promise<Attempt<Grant>> {
    this.core.checkOpen();
    const { ctx, owner } = acq;
    // Only an unlock by a context owner can race with its acquisition (a contextless unlock releases a
    // granted hold), so detached owners skip the count.
    if (!ctx.detached) {
      takeOff(ctx, this.holdKey);
      acq.flying = true;
    }
    let result: AcquireResult;
    try {
      result = await this.core.executor.run('lock.acquire', () => this.sendAttempts(acq), {
        idempotent: true,
        deadline,
        signal,
        expects: this.expects,
        onAmbiguous: () => {
          acq.armed = true;
          this.unsettle(ctx, acq.sentAt + acq.lease);
        },
        onLateResults: (results) => {
          // A grant that went through after the call gave up: undo it, unless the lock is unsettled and
          // an attempt that adopts such a grant (armed guard) was sent since; the mark then stays until
          // the owner adopts it or, abandoned, releases it.
          if (!results.some((r) => r.granted)) return;
          const mark = this.unsettled(ctx);
          if (mark?.tried) return;
          if (mark) this.settle(ctx);
          void this.undo(owner, monotonic() + acq.lease);
        },
      });
    } catch (error) {
      this.land(acq);
      throw error;
    }
    if (!result.granted) {
      this.land(acq);
      return { acquired: false, retryAfterMs: result.ttl };
    }
    this.settle(ctx);
    return { acquired: true, value: { sentAt: acq.sentAt, token: result.token } };
  }

  /** One try of `attempt`: the acquire script, sent again with the count corrected when Redis answers that the owner's holds had ended. */
  private async sendAttempts(acq: Acquisition): Promise<AcquireResult> {
    const result = await this.sendAttempt(acq);
    if (result.granted || !result.lost) return result;
    this.holdEnded(acq);
    return this.sendAttempt(acq);
  }

  /** Sends one acquire script of `acq` (its guard armed after a lost reply, see `Acquisition`). */
  private async sendAttempt(acq: Acquisition): Promise<AcquireResult> {
    const { ctx, owner } = acq;
    const n = ++acq.sent;
    acq.sentAt = monotonic();
    const guard = acq.armed ? String(acq.before) : '';
    const mark = acq.armed ? this.unsettled(ctx) : undefined;
    if (mark) mark.tried = true;
    const result = await this.runAcquire(owner, String(acq.lease), guard, String(acq.before));
    if (result.granted && this.core.replicaSync) await this.confirmReplicated(owner);
    // The latest attempt found the lock busy: no earlier attempt's grant is in Redis.
    if (!result.granted && !result.lost && !acq.done && n === acq.sent) this.settle(ctx);
    return result;
  }

  /**
   * Redis answered that the owner's hold had ended although this client counted `acq.before` holds (its
   * lease ran out, or the key was deleted, without the client knowing): the record of those holds is
   * dropped (unless a grant to the same owner made a new one since), the watchdog stops renewing them and
   * reports them lost (`lockLost`, as its next renewal would have), and the acquisition goes on from the
   * owner's count as recorded now, so that a retry's guard is the count the script wrote on.
   */
  private holdEnded(acq: Acquisition): void {
    const { ctx } = acq;
    if (acq.hold !== undefined && ctx.holds.get(this.holdKey) === acq.hold) {
      if (acq.hold.renewed.includes(true)) this.core.watchdog.holdsEnded(this.key, acq.owner);
      recordReleased(ctx, this.holdKey, true, true);
    }
    acq.before = ctx.holds.get(this.holdKey)?.count ?? 0;
  }

  /** The owner's unsettled mark on this lock (see `LockContext.unsettled`), if any. */
  private unsettled(ctx: LockContext): Unsettled | undefined {
    return ctx.unsettled?.get(this.holdKey);
  }

  /** Marks the lock unsettled for `ctx` (a grant may be in Redis) until `until` (monotonic ms). */
  private unsettle(ctx: LockContext, until: number): void {
    const mark = this.unsettled(ctx);
    if (mark) mark.until = Math.max(mark.until, until);
    else (ctx.unsettled ??= new Map<string, Unsettled>()).set(this.holdKey, { until, tried: false });
  }

  /** The owner knows the lock's state again: a grant was recorded, or its latest attempt found the lock busy. */
  private settle(ctx: LockContext): void {
    ctx.unsettled?.delete(this.holdKey);
  }

  /** Ends the attempt in flight of `acq`, if any. */
  private land(acq: Acquisition): void {
    if (!acq.flying) return;
    acq.flying = false;
    landed(acq.ctx, this.holdKey);
  }

  /**
   * Runs the acquire script once (`guard`: '' or the hold count before a lost attempt; `held`: the owner's
   * hold count as this client knows it, see `holdSource`) for this lock's `kind`. The fenced lock
   * overrides it to take a token in the same script.
   */
  protected runAcquire(owner: string, lease: string, guard: string, held: string): Promise<AcquireResult> {
    return ACQUIRE.run(this.core.connection, { lock: this.key, leaseMs: lease, owner, guard, heldCount: held, kind: this.kind });
  }

  /**
   * Waits for the lock with pub/sub on its channel; the spin lock overrides it with backoff polling, the
   * fair lock with a channel of the waiting `owner`'s own.
   */
  protected waitForLock(waitMs: number, signal: AbortSignal | undefined, attempt: (deadline: number | undefined) => Promise<Attempt<Grant>>, _owner: string): Promise<Grant | undefined> {
    return this.waitOn(this.channel, WAKE_ONE, waitMs, signal, attempt);
  }

  /** The pub/sub wait loop (`waitFor`) on `channel`, where one message wakes `rule(message)` local waiters. */
  protected waitOn(channel: string, rule: WakeRule, waitMs: number, signal: AbortSignal | undefined, attempt: (deadline: number | undefined) => Promise<Attempt<Grant>>): Promise<Grant | undefined> {
    return clientWait(this.core, { channel, rule, waitMs, signal, attempt });
  }

  /**
   * Acquires for `ctx`'s owner; registers the watchdog first and records the hold in `ctx` (and, for a
   * detached owner, among this object's contextless holds). When an earlier call of the owner left the
   * lock unsettled (a lost reply), the guard is armed from the first attempt: a grant of that call still
   * in Redis is adopted as this acquisition.
   */
  protected acquireAs(ctx: LockContext, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Grant | undefined> {
    const owner = this.ownerOf(ctx);
    return this.core.observe.acquire(this.metricKind, this.name, this.key, owner, waitMs, signal, (probe) => this.acquireObserved(ctx, owner, waitMs, leaseMs, signal, probe));
  }

  /** `acquireAs` for `owner` (`ctx`'s), telling `probe` (the observer's, see `Observer.acquire`) of its attempts. */
  private async acquireObserved(ctx: LockContext, owner: string, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, probe: AcquireProbe): Promise<Grant | undefined> {
    const { core } = this;
    core.checkOpen();
    const started = monotonic();
    const renewal = leaseMs === undefined ? this.registerHold(owner) : undefined;
    const lease = leaseMs ?? core.watchdog.leaseMs;
    const mark = this.unsettled(ctx);
    if (mark && mark.until <= started) this.settle(ctx);
    const hold = ctx.holds.get(this.holdKey);
    const acq: Acquisition = { ctx, owner, lease, hold, before: hold?.count ?? 0, armed: mark !== undefined && mark.until > started, sent: 0, sentAt: 0, flying: false, done: false };
    let grant: Grant | undefined;
    let holds = 0;
    try {
      grant = await this.waitForLock(waitMs, signal, probed(probe, (deadline) => this.attempt(acq, deadline, signal)), owner);
      if (grant) {
        renewal?.confirm(grant.sentAt);
        holds = recordAcquired(ctx, this.holdKey, leaseMs === undefined, monotonic()).count;
        if (ctx.detached) this.remember(ctx, leaseMs === undefined ? Infinity : grant.sentAt + leaseMs);
      }
    } finally {
      acq.done = true;
      if (!grant) renewal?.abandon();
      this.land(acq);
    }
    if (!grant) return undefined;
    if (core.debug) core.log.debug({ lock: this.name, owner, holds, waitMs: Math.round(monotonic() - started), leaseMs: leaseMs ?? 'watchdog' }, 'lock acquired');
    return grant;
  }

  /**
   * Adds a contextless hold to this object's list. A grant to a new owner of an exclusive lock proves the
   * older contextless holds gone (their leases ran out, or they were deleted): they are dropped, so that
   * `unlock()` releases the current holder. For the read lock, holds known to have ended are dropped.
   */
  private remember(ctx: LockContext, until: number): void {
    const now = monotonic();
    const held: Contextless = { ctx, until, releasing: false };
    if (this.exclusive) this.contextless = [held]; // made with its one entry (a list grown from empty reserves room for 16)
    else {
      this.contextless = this.contextless.filter((c) => c.releasing || (c.until > now && (c.until < Infinity || this.core.watchdog.renews(this.key, this.ownerOf(c.ctx)))));
      this.contextless.push(held);
    }
  }

  /** The oldest contextless hold no `unlock()` is releasing, if any: among `own` (the calling task's owners) unless it is empty. */
  private releasable(own: readonly LockContext[]): Contextless | undefined {
    for (const held of this.contextless) if (!held.releasing && (own.length === 0 || own.includes(held.ctx))) return held;
    return undefined;
  }

  /** Removes `ctx` from this object's contextless holds (it holds nothing any more). */
  private forget(ctx: LockContext): void {
    const i = this.contextless.findIndex((c) => c.ctx === ctx);
    if (i >= 0) this.contextless.splice(i, 1);
  }

  /**
   * Registers `owner`'s hold with the watchdog before its acquire is sent, reusing this lock's previous
   * hold record when it is free (see `Watchdog.register`); the read-write lock renews its own way.
   */
  protected registerHold(owner: string): WatchdogHold {
    const hold = this.core.watchdog.register(LOCK_RENEWAL, this.name, this.key, owner, (this.renewalKeys ??= [this.key]), this.spareHold);
    this.spareHold = hold;
    return hold;
  }

  /**
   * Releases one hold of `ctx`'s owner: the innermost one, or one of the kind `renewed` (true: renewed by
   * the watchdog, false: with a lease) when a handle knows it. Only releasing a renewed hold takes one
   * count off the watchdog's, so releasing an inner leased hold never stops renewing an outer one.
   * An unlock issued while an acquisition attempt of the same owner is in flight first waits for that
   * attempt's outcome to be recorded (Redis runs the two in that order too), so that a grant it releases is
   * never renewed or reported lost afterwards. When Redis answers that the owner held nothing although the
   * watchdog was renewing its last hold (the unlock ran before the watchdog could notice the loss, as when
   * a blocked event loop resumes past the lease), the hold is reported lost (`lockLost`, and `controller`,
   * the releasing handle's signal, aborts) before `IllegalMonitorStateError` is thrown.
   */
  protected unlockAs(ctx: LockContext, renewed?: boolean, controller?: AbortController): Promise<void> {
    const owner = this.ownerOf(ctx);
    return this.core.observe.release(this.metricKind, this.name, this.key, owner, () => this.unlockObserved(ctx, owner, renewed, controller));
  }

  /** `unlockAs` for `owner` (`ctx`'s), measured by the observer (see `Observer.release`). */
  private async unlockObserved(ctx: LockContext, owner: string, renewed?: boolean, controller?: AbortController): Promise<void> {
    const { core } = this;
    const inFlight = allLanded(ctx, this.holdKey);
    if (inFlight) await inFlight;
    const kind = releasedRenewed(ctx, this.holdKey, renewed);
    const releasedAt = monotonic();
    const released = kind ? core.watchdog.release(this.key, owner) : undefined;
    core.checkOpen();
    const latch = core.latches.next(this.latchPrefix);
    const guard = this.unlockGuard(ctx);
    let attempts = 0;
    let reply: unknown = null;
    try {
      reply = await core.executor.run('lock.unlock', (attempt) => this.runUnlock(owner, latch, (attempts = attempt), guard), this.unlockOptions);
    } finally {
      // A guarded unlock wrote its latch only if it answered nil or 2/3, or was retried (see `unlockSource`).
      if (guard === '' || attempts > 1 || reply === null || Number(reply) >= 2) core.latches.release(latch);
    }
    if (reply !== null && Number(reply) >= 2) reply = Number(reply) - 2;
    if (reply === null) {
      recordReleased(ctx, this.holdKey, kind, true);
      if (ctx.detached) this.forget(ctx);
      if (released) core.watchdog.reportLost(released, releasedAt, controller);
      throw new IllegalMonitorStateError(this.name, owner);
    }
    const hold = recordReleased(ctx, this.holdKey, kind);
    if (ctx.detached && !ctx.holds.has(this.holdKey)) this.forget(ctx);
    if (core.debug && Number(reply) === 1) {
      core.log.debug({ lock: this.name, owner, holdMs: hold ? Math.round(monotonic() - hold.since) : undefined }, 'lock released');
    }
  }

  /**
   * The guard of an unlock by `ctx` (see `unlockSource`): the owner's hold count as this client knows it,
   * or '' (latch every answer) when a grant whose reply was lost may be in Redis.
   */
  protected unlockGuard(ctx: LockContext): string {
    return this.unsettled(ctx) ? '' : String(ctx.holds.get(this.holdKey)?.count ?? 0);
  }

  /**
   * Runs the unlock script once (`attempt` > 1: a retry, which replays the first attempt's answer; `guard`:
   * the owner's hold count before the call, or '' to latch every answer, see `unlockSource`): nil when
   * `owner` does not hold the lock, 0 when holds remain, 1 when released. Fair and read-write locks
   * override it.
   */
  protected runUnlock(owner: string, latch: string, attempt: number, guard: string): Promise<number | null> {
    const { connection, latches } = this.core;
    return UNLOCK.run(connection, { lock: this.key, latch, owner, channel: this.releaseChannel(), publishCommand: connection.publishCommand, latchTtl: latches.ttlArg, retry: attempt > 1 ? '1' : '0', guard });
  }

  /** The channel a release that frees the lock publishes on; the spin lock returns '' (publish nothing). */
  protected releaseChannel(): string {
    return this.channel;
  }

  /**
   * Sets the lock's TTL to `leaseMs` if `ctx`'s owner holds it (the multi-lock's final lease, as Redisson's
   * `expireAsync` on each member), with the renewal script. Resolves to the send time (monotonic ms), or
   * `undefined` when the owner no longer holds it. A lock whose holds are not fields of its hash overrides it.
   */
  protected async setLease(ctx: LockContext, leaseMs: number): Promise<number | undefined> {
    this.core.checkOpen();
    let sentAt = 0;
    const reply = await this.core.executor.run(
      'lock.setLease',
      () => {
        sentAt = monotonic();
        return RENEW.run(this.core.connection, [this.key], [String(leaseMs), this.ownerOf(ctx)]);
      },
      { idempotent: true },
    );
    return reply[0] === 1 ? sentAt : undefined;
  }

  /** `syncReplicas`: a grant no replica acknowledged is undone before the error goes up (Redisson #4822). */
  private async confirmReplicated(owner: string): Promise<void> {
    try {
      await this.core.replicaSync!.confirm(this.key);
    } catch (error) {
      await this.undo(owner, 0);
      throw error;
    }
  }

  /**
   * Releases one hold of `owner` that went through without its caller knowing (a grant that came after
   * the call gave up, or whose reply was lost), retrying while Redis is unreachable until `until`
   * (monotonic ms: the hold has expired by then) or the client shuts down. Retries replay the first
   * answer (one unlock latch), so at most one hold is released.
   */
  private async undo(owner: string, until: number): Promise<void> {
    const { core } = this;
    const latch = core.latches.next(this.latchPrefix);
    let attempts = 0;
    try {
      for (let delay = UNDO_RETRY_MS; ; delay = Math.min(2 * delay, UNDO_RETRY_CAP_MS)) {
        try {
          await core.executor.run('lock.unlock', () => this.runUnlock(owner, latch, ++attempts, ''), { idempotent: true });
          return;
        } catch (error) {
          if (error instanceof ClientClosedError) return;
          if (!(error instanceof RedisUnavailableError) || monotonic() + delay >= until) {
            core.log.warn({ lock: this.name, owner, err: error }, 'could not release an acquisition its caller does not know of; it expires with its lease');
            return;
          }
        }
        await pause(delay, core.closing);
      }
    } catch {
      // Shut down while pausing: the hold expires with its lease.
    } finally {
      core.latches.release(latch);
    }
  }

  /** Builds the handle of an acquisition by `ctx`: its signal follows the watchdog, or the explicit lease. */
  protected handle(ctx: LockContext, grant: Grant, leaseMs: number | undefined): LockHandle {
    const owner = this.ownerOf(ctx);
    const hold = new HoldSignal(this.core.watchdog, this.name, this.key, [owner]);
    if (leaseMs === undefined) hold.followRenewals();
    else hold.followLease(grant.sentAt, leaseMs);
    const extend = async (ms: number): Promise<boolean> => {
      const sentAt = await this.setLease(ctx, ms);
      if (sentAt === undefined || hold.signal.aborted) return false;
      hold.followLease(sentAt, ms);
      return true;
    };
    let renewed = leaseMs === undefined;
    const stopRefresh = (): void => {
      if (!renewed) return;
      renewed = false;
      hold.stop(true);
      this.core.watchdog.release(this.key, owner);
    };
    return new LockHandle(
      this.name,
      owner,
      hold.signal,
      leaseMs,
      grant.token,
      async () => {
        hold.stop(true);
        await this.unlockAs(ctx, renewed, hold.abortable);
      },
      this.extendable ? extend : undefined,
      stopRefresh,
    );
  }

  /** Whether a handle's `extend()` may set a new lease with `setLease` (every lock whose holds are fields of its hash). */
  protected readonly extendable: boolean = true;

  /** The executor options of an unlock (made once: the same for every call). */
  private get unlockOptions(): RunOptions<number | null> {
    return (this.unlockRun ??= { idempotent: true, expects: this.expects });
  }

  /** What a WRONGTYPE reply on this lock's key is reported as (made once: it is passed with every call). */
  protected get expects(): { key: string; kind: ObjectKind } {
    return (this.expected ??= { key: this.key, kind: this.kind });
  }

  private read(args: string[]): Promise<unknown> {
    this.core.checkOpen();
    return this.core.executor.run(args[0], () => this.core.connection.send(this.key, args), { idempotent: true, expects: this.expects });
  }
}

/** Throws `InvalidArgumentError` when a time was given to a lock method without its unit. */
export const requireLockUnit = (unit: TimeUnit | undefined): TimeUnit => requireUnit(unit, 'tryLock(1, 5, "seconds")');

/** `tryLock(…)` arguments → [wait ms (0: one attempt), lease ms or undefined for the watchdog]. */
export function tryLockTimes(waitTime: number | undefined, leaseOrUnit: number | TimeUnit | undefined, unit: TimeUnit | undefined): [number, number | undefined] {
  if (waitTime === undefined) return [0, undefined];
  refuseOptionsObject(waitTime, 'waitTime', 'tryLock(1, 5, "seconds")', 'acquire(options)');
  if (typeof leaseOrUnit === 'string' || leaseOrUnit === undefined) {
    return [waitMillis(waitTime, requireLockUnit(leaseOrUnit)), undefined];
  }
  const u = requireLockUnit(unit);
  return [waitMillis(waitTime, u), leaseMillis(leaseOrUnit, u)];
}
