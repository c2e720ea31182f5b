import { pause } from '../backoff.js';
import { newestAcquisition, newestNote, noteRefusal, noteTaskHold, type TaskHold } from '../task-holds.js';
import { allLanded, anyRenewed, detachedContext, landed, owningContext, recordAcquired, recordReleased, releasedRenewed, takeOff, type Hold, type LockContext, type Unsettled } from '../context.js';
import type { Core } from '../core.js';
import { ClientClosedError, IllegalMonitorStateError, InvalidArgumentError, LockAcquireTimeoutError, LockLostError, OwnerUnknownError, RedisUnavailableError, ReentryNeedsContextError } from '../errors.js';
import { auxName, mainKey } from '../keys.js';
import { checkedRead, type ObjectKind } from '../kinds.js';
import type { MetricKind } from '../observe/kinds.js';
import { QUIET_PROBE, type AcquireProbe } from '../observe/observer.js';
import { WAKE_ONE, type Channel, type WakeRule } from '../pubsub/channel.js';
import { waitDeadline, waitMore, type Attempt } from '../pubsub/wait.js';
import { optionKeys } from '../option-keys.js';
import { checkOptions, leaseMillis, monotonic, optionLease, optionWait, refuseOptionsObject, refuseStringTime, requireUnit, timeFields, waitMillis, type TimeUnit } from '../time.js';
import type { Request } from '../redis/executor.js';
import { HoldSignal, type ReleasedHold, type RenewalKind, type WatchdogHold } from '../watchdog/hold.js';
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
  /** Whether `ctx`'s owner holds `lock` (`HGET`). */
  held(lock: RLock, ctx: LockContext): Promise<boolean>;
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

/** The keys of `AcquireOptions` (any other key is refused: `refuseUnknownKeys`). */
export const ACQUIRE_OPTION_KEYS = optionKeys<AcquireOptions>({ ...timeFields(), identifier: true, acquiredExternally: true });

/** Field names of lock hashes that are not owners. */
const RESERVED_FIELDS = new Set(['kind', 'mode']);

/** An acquisition call that got the lock: its owner and its grant (see `RLock.acquireForCaller`). */
export interface Taken {
  readonly ctx: LockContext;
  readonly grant: Grant;
}

/** An attempt that found the lock busy, as the wait loops take it. */
export type Refused = Extract<Attempt<Grant>, { acquired: false }>;

/** What `Acquisition` and `Unlock` ask of their lock: `RLock`'s private steps, set by its static block. */
interface CallSteps {
  expects(lock: RLock): { key: string; kind: ObjectKind };
  send(acq: Acquisition): Promise<AcquireResult>;
  answered(acq: Acquisition, result: AcquireResult): unknown;
  failed(acq: Acquisition): void;
  ambiguous(acq: Acquisition): void;
  late(acq: Acquisition, results: AcquireResult[]): Promise<void> | undefined;
  sendUnlock(call: Unlock, attempt: number): Promise<number | null>;
  unlocked(call: Unlock, reply: number | null): void;
  unlockFailed(call: Unlock): void;
}

/** @internal Set by `RLock`'s static block. */
let callSteps: CallSteps;

/**
 * One acquisition call of a hash lock (RLock and its variants) from its first attempt to its outcome, and
 * the executor request of each of its attempts (see `Request`: the call's options are its fields, `send`
 * sends an attempt, `answered` goes on from its result in the reaction of the reply). One object per call:
 * a call granted at once makes no other (no options, no closures, no frame of the wait loop).
 *
 * Its guard against lost replies: `before` is the owner's hold count before the call; once an attempt
 * failed ambiguously (or an earlier call of the owner left the lock unsettled, see
 * `LockContext.unsettled`), attempts ask the script not to add a second hold.
 * @internal Not exported from the package.
 */
export class Acquisition implements Request<AcquireResult, unknown>, Taken {
  readonly idempotent = true;
  /** Attempts sent. */
  sent = 0;
  /** Monotonic send time of the latest attempt. */
  sentAt = 0;
  /** An attempt is in flight and counted in `ctx.flights` (context owners only). */
  flying = false;
  /** The call is over: replies of attempts it gave up on no longer say anything about it. */
  done = false;
  /** The first attempt was refused and the lock's wait runs (`RLock.waitAfter`): attempts answer the wait. */
  waiting = false;
  /** The grant, once the call got the lock. */
  grant!: Grant;
  /** The unsettled mark this call's ambiguous failure left (or extended), if any (see `RLock.lateResults`). */
  mark: Unsettled | undefined;

  constructor(
    readonly lock: RLock,
    readonly ctx: LockContext,
    readonly owner: string,
    /** The caller's wait time in ms (0: one attempt, Infinity: no limit). */
    readonly waitMs: number,
    /** The end of the wait, as `waitDeadline` gives it (the executor's `deadline` of every attempt). */
    readonly deadline: number | undefined,
    /** The caller's lease in ms; undefined for the watchdog. */
    readonly leaseMs: number | undefined,
    /** Lease in ms written by every attempt (the watchdog's when none was given). */
    readonly lease: number,
    readonly signal: AbortSignal | undefined,
    readonly probe: AcquireProbe,
    /** Monotonic ms the call started at. */
    readonly started: number,
    /** The owner's hold record before the call, if any. */
    readonly hold: Hold | undefined,
    /** Its count, sent with every attempt; 0 once Redis answered that those holds had ended (see `holdEnded`). */
    public before: number,
    public armed: boolean,
    /** The watchdog's registration of a call without a lease. */
    readonly renewal: WatchdogHold | undefined,
    /** The calling task's note of a contextless call (see task-holds.ts): marked done when the call ends. */
    readonly note: TaskHold | undefined,
    /** The owner was made for this call alone: abandoned (`RLock.abandonOwner`) when it gets nothing. */
    readonly ownCall: boolean,
    /** The wait's channel as it was before the first attempt, and its `dropped` count then (see `waitMore`). */
    readonly liveBefore: Channel | undefined,
    readonly seen: number | undefined,
  ) {}

  /** What a WRONGTYPE reply is reported as (read by the executor only then). */
  get expects(): { key: string; kind: ObjectKind } {
    return callSteps.expects(this.lock);
  }

  send(): Promise<AcquireResult> {
    return callSteps.send(this);
  }

  answered(result: AcquireResult): unknown {
    return callSteps.answered(this, result);
  }

  failed(): void {
    callSteps.failed(this);
  }

  onAmbiguous(): void {
    callSteps.ambiguous(this);
  }

  onLateResults(results: AcquireResult[]): Promise<void> | undefined {
    return callSteps.late(this, results);
  }
}

/**
 * One unlock call of a hash lock, and its executor request (see `Request`): `send` runs the unlock script
 * (a retry replays the first attempt's answer), `answered` records the release. One object per call.
 */
class Unlock implements Request<number | null, void> {
  readonly idempotent = true;
  /** Attempts sent (a retry replays the first attempt's answer, see `unlockSource`). */
  attempts = 0;

  constructor(
    readonly lock: RLock,
    readonly ctx: LockContext,
    readonly owner: string,
    /** Whether the hold released is one the watchdog renews. */
    readonly renewed: boolean,
    /** The watchdog's record of the last renewed hold, when this released it (see `Watchdog.release`). */
    readonly released: ReleasedHold | undefined,
    /** Monotonic ms the release began at. */
    readonly releasedAt: number,
    /** The releasing handle's signal, aborted when the hold is found lost. */
    readonly controller: AbortController | undefined,
    /** The call's unlock latch key. */
    readonly latch: string,
    /** The owner's hold count as this client knows it, or '' to latch every answer (see `RLock.unlockGuard`). */
    readonly guard: string,
    /** The contextless hold `unlock()` marked `releasing` for this call, unmarked when it ends. */
    readonly held: Contextless | undefined,
  ) {}

  /** What a WRONGTYPE reply is reported as (read by the executor only then). */
  get expects(): { key: string; kind: ObjectKind } {
    return callSteps.expects(this.lock);
  }

  send(attempt: number): Promise<number | null> {
    return callSteps.sendUnlock(this, attempt);
  }

  answered(reply: number | null): void {
    if (this.held) this.held.releasing = false;
    callSteps.unlocked(this, reply);
  }

  failed(): void {
    if (this.held) this.held.releasing = false;
    callSteps.unlockFailed(this);
  }
}

/**
 * A hold of one contextless acquisition of a lock object, not yet released: its owner, a detached context
 * of its own, which carries the hold's lease end and release mark (`LockContext.until`, `releasing`).
 */
type Contextless = LockContext;

/** Does nothing (settles a promise whatever its outcome). */
const ignore = (): void => {};

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
  /** How the watchdog renews this lock's holds and `setLease` sets a lease: the owner-checked `PEXPIRE` of its key (the non-reentrant lock checks a string instead of a hash field). */
  protected readonly renewal: RenewalKind = LOCK_RENEWAL;
  /** How metrics and events name this lock's kind (the `relock.kind` attribute); each variant has its own. */
  protected readonly metricKind: MetricKind = 'lock';
  /** This lock's entry in a context's holds (`clientId + ' ' + key`; the read and write locks of one read-write lock differ). */
  protected readonly holdKey: string;
  /** The part of this lock's unlock latch keys that every unlock shares, once made (see `latchPrefix`). */
  private latchKeys: string | undefined;
  /** The hold of this lock's last watchdog acquisition, for `registerHold` to reuse. */
  private spareHold: WatchdogHold | undefined;
  /** Listeners of the lock's key events (`addListener`), made on first use. */
  private events: KeyEvents | undefined;
  private expected: { key: string; kind: ObjectKind } | undefined;

  static {
    memberSteps = {
      context: (lock) => lock.acquiringContext(),
      abandon: (lock, ctx) => lock.abandonOwner(ctx),
      acquire: (lock, ctx, waitMs, leaseMs, signal) => lock.acquireAs(ctx, waitMs, leaseMs, signal).then((taken) => taken?.grant),
      release: (lock, ctx) => lock.unlockAs(ctx),
      handle: (lock, ctx, grant, leaseMs) => lock.handle(ctx, grant, leaseMs),
      setLease: (lock, ctx, leaseMs) => lock.setLease(ctx, leaseMs),
      held: (lock, ctx) => lock.holdCount(ctx).then((count) => count > 0),
      clientId: (lock) => lock.core.id,
      watchdogLease: (lock) => lock.core.watchdog.leaseMs,
    };
    callSteps = {
      expects: (lock) => lock.expects,
      send: (acq) => acq.lock.sendAttempt(acq),
      answered: (acq, result) => acq.lock.answered(acq, result),
      failed: (acq) => acq.lock.attemptFailed(acq),
      ambiguous: (acq) => acq.lock.ambiguous(acq),
      late: (acq, results) => acq.lock.lateResults(acq, results),
      sendUnlock: (call, attempt) => call.lock.runUnlock(call.owner, call.latch, (call.attempts = attempt), call.guard),
      unlocked: (call, reply) => call.lock.unlocked(call, reply),
      // A failed call may have written its latch: it is deleted with the batch.
      unlockFailed: (call) => call.lock.core.latches.release(call.latch),
    };
  }

  /** @internal Use `LockClient.getLock(name)`. */
  constructor(
    protected readonly core: Core,
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

  /** The part of this lock's unlock latch keys that every unlock shares (see `UnlockLatches.prefix`), made on first use. */
  private get latchPrefix(): string {
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
   * any context, `ReentryNeedsContextError` when the calling task already holds it: see the class description).
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
    checkOptions(options, ACQUIRE_OPTION_KEYS);
    const wait = optionWait(options);
    const lease = optionLease(options);
    const owner = this.checkIdentifier(options);
    options.signal?.throwIfAborted();
    if (options.acquiredExternally) return this.takeOver(detachedContext(owner), lease);
    const taken = await this.acquireForCaller(wait, lease, options.signal, owner === undefined ? undefined : detachedContext(owner), true);
    if (!taken) throw new LockAcquireTimeoutError(this.name, wait);
    return this.handle(taken.ctx, taken.grant, lease);
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
    const ctx = this.context();
    if (ctx) return this.unlockAs(ctx);
    // Outside a context: the caller's newest note of this object alone (see task-holds.ts), never another hold.
    const note = newestNote(this);
    if (!note) return Promise.reject(new OwnerUnknownError(this.name, this.ownerOf(detachedContext())));
    // Its acquisition is in flight: its outcome first, so that a grant is released, not renewed forever.
    if (!note.done) return note.call!.then(ignore, ignore).then(() => this.unlockNoted(note.owner));
    return this.unlockNoted(note.owner);
  }

  /** Releases the hold of the contextless owner `held` (the caller's newest note), or throws `IllegalMonitorStateError` when it holds none. */
  private unlockNoted(held: Contextless): Promise<void> {
    // Refused, timed out, aborted, released, or being released by another unlock(): nothing of the caller's to release.
    if (held.releasing! || !held.holds.has(this.holdKey)) return Promise.reject(new IllegalMonitorStateError(this.name, this.ownerOf(held)));
    // Marked while its unlock runs, so that a concurrent unlock() of the same note throws (cleared when it ends).
    held.releasing = true;
    return this.unlockAs(held, undefined, undefined, held);
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
    // Outside a context, the owner of the caller's newest note of this object (none: a new owner, which holds nothing).
    return this.holdCount(this.context() ?? newestNote(this)?.owner ?? detachedContext());
  }

  /** The hold count of `ctx`'s owner in Redis (`HGET`). */
  protected async holdCount(ctx: LockContext): Promise<number> {
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
   * the wait ran out. An owner made for this call alone is abandoned when it got nothing. Never throws:
   * failures reject.
   */
  protected acquireForCaller(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, owner?: LockContext, forHandle = false): Promise<Taken | undefined> {
    let ctx = owner ?? this.context();
    if (!ctx) {
      // Outside a context, a task whose newest note of the object holds it would wait for itself: refused,
      // nothing sent. A note still in flight is no refusal: siblings started in one synchronous run, and the
      // jobs a dispatcher starts, see such notes of tasks started before them (see task-holds.ts).
      const earlier = newestAcquisition(this);
      if (earlier?.done && this.stillHolds(earlier.owner)) {
        // The refusal is noted too: the hold it saw may be a sibling's, so this task's unlock() must not
        // release it (it throws IllegalMonitorStateError: relock cannot show the caller owns it).
        noteRefusal(this, detachedContext());
        return Promise.reject(new ReentryNeedsContextError(this.name));
      }
      ctx = detachedContext();
    }
    // A contextless lock()/tryLock() notes its owner in the caller's task, for that task's unlock() (see
    // task-holds.ts); a handle's acquisition is released through the handle.
    const note = owner === undefined && ctx.detached && !forHandle ? noteTaskHold(this, ctx) : undefined;
    const call = this.acquireAs(ctx, waitMs, leaseMs, signal, note, true);
    if (note) note.call = call;
    return call;
  }

  /** Whether the contextless owner `ctx` holds this lock as far as this client knows: recorded, its lease not run out, its renewals not failed. */
  private stillHolds(ctx: Contextless): boolean {
    const until = ctx.until!;
    return ctx.holds.has(this.holdKey) && until > monotonic() && (until < Infinity || this.core.watchdog.renews(this.key, this.ownerOf(ctx)));
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
    recordAcquired(ctx, this.holdKey, leaseMs === undefined, this.core.debug ? monotonic() : 0);
    this.remember(ctx, leaseMs === undefined ? Infinity : sentAt + leaseMs);
    return this.handle(ctx, { sentAt }, leaseMs);
  }

  /**
   * Sends one attempt of `acq` (an executor request, with retries of transient failures and the guard
   * against lost replies); its answer goes through `answered`. While it is in flight, unlocks of a context
   * owner wait (`ctx.flights`); a granting attempt stays in flight until its hold is recorded (`finish`).
   */
  private attemptNow(acq: Acquisition): Promise<unknown> {
    // Only an unlock by a context owner can race with its acquisition (a contextless unlock releases a
    // granted hold), so detached owners skip the count.
    if (!acq.ctx.detached) {
      takeOff(acq.ctx, this.holdKey);
      acq.flying = true;
    }
    return this.core.executor.request('lock.acquire', acq);
  }

  /** An attempt of `acq`'s wait after its refused first attempt (`wake`: what woke the waiter; undefined when it polls). */
  protected nextAttempt(acq: Acquisition, wake: 'message' | 'timer' | undefined): Promise<Attempt<Grant>> {
    this.core.checkOpen();
    acq.probe.attempt(wake);
    return this.attemptNow(acq) as Promise<Attempt<Grant>>;
  }

  /** Sends one acquire script of `acq` (its guard armed after a lost reply, see `Acquisition`): the executor's `send`. */
  private sendAttempt(acq: Acquisition): Promise<AcquireResult> {
    acq.sent++;
    acq.sentAt = monotonic();
    const guard = acq.armed ? String(acq.before) : '';
    const mark = acq.armed ? this.unsettled(acq.ctx) : undefined;
    if (mark) mark.tried = true;
    const sent = this.runAcquire(acq.owner, String(acq.lease), guard, String(acq.before));
    return this.core.replicaSync ? this.replicated(acq.owner, sent) : sent;
  }

  /** `syncReplicas`: the result of `sent`, once a replica acknowledged a grant (undone when none did). */
  private async replicated(owner: string, sent: Promise<AcquireResult>): Promise<AcquireResult> {
    const result = await sent;
    if (result.granted) await this.confirmReplicated(owner);
    return result;
  }

  /**
   * The answer to an attempt of `acq` (the executor's `answered`). `'lost'` (the owner's holds had ended
   * without this client knowing): asked again with the count corrected, as the same attempt. Busy: the
   * lock is settled (the latest attempt found it busy, so no earlier attempt's grant is in Redis); the
   * first attempt then goes on with the lock's wait (`waitAfter`), or ends the call when it may not wait.
   * Granted: the call ends (`finish`). An attempt of the wait answers the wait loop with an `Attempt`.
   */
  private answered(acq: Acquisition, result: AcquireResult): unknown {
    if (result.granted) {
      this.settle(acq.ctx);
      const grant: Grant = { sentAt: acq.sentAt, token: result.token };
      return acq.waiting ? { acquired: true, value: grant } : this.finish(acq, grant);
    }
    if (result.lost) {
      this.holdEnded(acq);
      return this.core.executor.request('lock.acquire', acq);
    }
    this.settle(acq.ctx);
    this.land(acq);
    acq.probe.busy();
    const refused: Refused = { acquired: false, retryAfterMs: result.ttl };
    if (acq.waiting) return refused;
    if (acq.waitMs <= 0) return this.finish(acq, undefined);
    acq.waiting = true;
    return this.waitAfter(acq, refused).then(
      (grant) => this.finish(acq, grant),
      (error: unknown) => {
        this.fail(acq);
        throw error;
      },
    );
  }

  /** An attempt of `acq` failed for good (the executor's `failed`): it is over; a first attempt's call ends. */
  private attemptFailed(acq: Acquisition): void {
    this.land(acq);
    if (!acq.waiting) this.fail(acq);
  }

  /** An attempt of `acq` failed in a way that leaves its effect unknown: the guard is armed, the lock unsettled. */
  private ambiguous(acq: Acquisition): void {
    acq.armed = true;
    acq.mark = this.unsettle(acq.ctx, acq.sentAt + acq.lease);
  }

  /**
   * A grant that went through after the call gave up: undo it, unless an attempt that adopts such a grant
   * (armed guard) was sent since the mark the call's failure left: the mark then stays until the owner
   * adopts the grant or, abandoned, releases it; once adopted (the armed attempt was granted and settled
   * the lock, possibly before this report came) the grant is the owner's hold and is not undone. A call
   * that left no mark (aborted) goes by the owner's current mark.
   */
  private lateResults(acq: Acquisition, results: AcquireResult[]): Promise<void> | undefined {
    if (!results.some((r) => r.granted)) return undefined;
    const mark = acq.mark ?? this.unsettled(acq.ctx);
    if (mark?.tried) return undefined;
    if (mark && this.unsettled(acq.ctx) === mark) this.settle(acq.ctx);
    return this.undo(acq.owner, monotonic() + acq.lease);
  }

  /**
   * Ends `acq` with `grant` (or without the lock): a grant is confirmed to the watchdog and recorded in the
   * owner's context (and, for a detached owner, among this object's contextless holds); an owner made for
   * the call alone that got nothing is abandoned. Resolves to the call's `Taken`, after the lock's wait
   * hooks are done (`endWait`).
   */
  private finish(acq: Acquisition, grant: Grant | undefined): Taken | undefined | Promise<Taken | undefined> {
    const { ctx, leaseMs } = acq;
    let holds = 0;
    if (grant) {
      acq.renewal?.confirm(grant.sentAt);
      // The hold's start serves the debug log alone: not read (nor kept as a heap number) otherwise.
      holds = recordAcquired(ctx, this.holdKey, leaseMs === undefined, this.core.debug ? monotonic() : 0).count;
      if (ctx.detached) this.remember(ctx, leaseMs === undefined ? Infinity : grant.sentAt + leaseMs);
      acq.grant = grant;
    }
    acq.done = true;
    if (!grant) acq.renewal?.abandon();
    this.land(acq);
    if (acq.note) acq.note.done = true;
    if (!grant && acq.ownCall) this.abandonOwner(ctx);
    const leaving = this.endWait(acq.owner, acq.waitMs, grant !== undefined);
    if (grant && this.core.debug) {
      this.core.log.debug({ lock: this.name, owner: acq.owner, holds, waitMs: Math.round(monotonic() - acq.started), leaseMs: leaseMs ?? 'watchdog' }, 'lock acquired');
    }
    const taken = grant ? acq : undefined;
    return leaving ? leaving.then(() => taken) : taken;
  }

  /** Ends `acq` on an error: nothing was acquired (the error goes to the caller). */
  private fail(acq: Acquisition): void {
    acq.done = true;
    acq.renewal?.abandon();
    this.land(acq);
    if (acq.note) acq.note.done = true;
    if (acq.ownCall) this.abandonOwner(acq.ctx);
    void this.endWait(acq.owner, acq.waitMs, false);
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
      if (anyRenewed(acq.hold)) this.core.watchdog.holdsEnded(this.key, acq.owner);
      recordReleased(ctx, this.holdKey, true, true);
    }
    acq.before = ctx.holds.get(this.holdKey)?.count ?? 0;
  }

  /** The owner's unsettled mark on this lock (see `LockContext.unsettled`), if any. */
  private unsettled(ctx: LockContext): Unsettled | undefined {
    return ctx.unsettled?.get(this.holdKey);
  }

  /** Marks the lock unsettled for `ctx` (a grant may be in Redis) until `until` (monotonic ms); returns the mark. */
  private unsettle(ctx: LockContext, until: number): Unsettled {
    let mark = this.unsettled(ctx);
    if (mark) mark.until = Math.max(mark.until, until);
    else (ctx.unsettled ??= new Map<string, Unsettled>()).set(this.holdKey, (mark = { until, tried: false }));
    return mark;
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
   * The channel a waiter for `owner` listens on (the fair lock: the owner's own), or undefined when this
   * lock waits without pub/sub (the spin lock).
   */
  protected waitChannel(_owner: string): string | undefined {
    return this.channel;
  }

  /** How many local waiters one message on the wait channel wakes. */
  protected readonly wakeRule: WakeRule = WAKE_ONE;

  /**
   * Waits for the lock after `acq`'s first attempt found it busy (`first`): pub/sub on `waitChannel`,
   * woken by `wakeRule`, with a timer on the holder's TTL (see `waitMore`). The spin lock overrides it
   * with backoff polling. Resolves to the grant, or undefined when the wait time ran out.
   */
  protected waitAfter(acq: Acquisition, first: Refused): Promise<Grant | undefined> {
    const { core } = this;
    const options = {
      channels: core.channels,
      channel: this.waitChannel(acq.owner)!,
      rule: this.wakeRule,
      waitMs: acq.waitMs,
      subscriptionTimeoutMs: core.subscriptionTimeout,
      maxPollMs: core.watchdog.leaseMs,
      signal: acq.signal,
      attempt: (_deadline: number | undefined, wake?: 'message' | 'timer') => this.nextAttempt(acq, wake),
    };
    return waitMore(options, acq.deadline, first, acq.liveBefore, acq.seen);
  }

  /** Called before the first attempt of a call of `owner` that may wait `waitMs` (the fair lock joins its queue bookkeeping). */
  protected beginWait(_owner: string, _waitMs: number): void {}

  /**
   * Called when that call ends (`granted` or not); a returned promise is awaited before a call without the
   * lock resolves (the fair lock leaves its queue), not after an error.
   */
  protected endWait(_owner: string, _waitMs: number, _granted: boolean): Promise<void> | undefined {
    return undefined;
  }

  /**
   * Acquires for `ctx`'s owner; registers the watchdog first and records the hold in `ctx` (and, for a
   * detached owner, among this object's contextless holds). When an earlier call of the owner left the
   * lock unsettled (a lost reply), the guard is armed from the first attempt: a grant of that call still
   * in Redis is adopted as this acquisition. `note`: the calling task's note of a contextless call (marked
   * done when the call ends); `ownCall`: `ctx` was made for this call alone (abandoned when it gets
   * nothing). Never throws: failures reject.
   */
  protected acquireAs(ctx: LockContext, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, note?: TaskHold, ownCall = false): Promise<Taken | undefined> {
    const owner = this.ownerOf(ctx);
    const { observe } = this.core;
    if (observe.acquiresQuietly) return this.acquireObserved(ctx, owner, waitMs, leaseMs, signal, QUIET_PROBE, note, ownCall);
    // Measured, the call's result is the grant (the `relock:acquire` message's `result`).
    let taken: Taken | undefined;
    const run = (probe: AcquireProbe): Promise<Grant | undefined> => this.acquireObserved(ctx, owner, waitMs, leaseMs, signal, probe, note, ownCall).then((t) => (taken = t)?.grant);
    return observe.acquire(this.metricKind, this.name, this.key, owner, waitMs, signal, run).then(() => taken);
  }

  /**
   * `acquireAs` for `owner` (`ctx`'s), telling `probe` (the observer's, see `Observer.acquire`) of its
   * attempts: sends the first attempt at once (see `Acquisition`).
   */
  private acquireObserved(ctx: LockContext, owner: string, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, probe: AcquireProbe, note: TaskHold | undefined, ownCall: boolean): Promise<Taken | undefined> {
    const { core } = this;
    try {
      core.checkOpen();
    } catch (error) {
      if (note) note.done = true;
      if (ownCall) this.abandonOwner(ctx);
      return Promise.reject(error);
    }
    const started = monotonic();
    const renewal = leaseMs === undefined ? this.registerHold(owner) : undefined;
    const mark = this.unsettled(ctx);
    if (mark && mark.until <= started) this.settle(ctx);
    const hold = ctx.holds.get(this.holdKey);
    // The channel as it is before the first attempt (see `waitMore`), when the call may wait on it (its
    // name is made only when some channel is subscribed: a free lock's holder keeps none).
    const channel = waitMs > 0 && !core.channels.empty ? this.waitChannel(owner) : undefined;
    const liveBefore = channel === undefined ? undefined : core.channels.live(channel);
    const acq = new Acquisition(this, ctx, owner, waitMs, waitDeadline(waitMs, started), leaseMs, leaseMs ?? core.watchdog.leaseMs, signal, probe, started, hold, hold?.count ?? 0, mark !== undefined && mark.until > started, renewal, note, ownCall, liveBefore, liveBefore?.dropped);
    this.beginWait(owner, waitMs);
    probe.attempt(undefined);
    return this.attemptNow(acq) as Promise<Taken | undefined>;
  }

  /** Records the lease end of a contextless hold (Infinity while the watchdog renews it), for `stillHolds`. */
  private remember(ctx: LockContext, until: number): void {
    ctx.until = until;
    ctx.releasing = false;
  }

  /**
   * Registers `owner`'s hold with the watchdog before its acquire is sent, reusing this lock's previous
   * hold record when it is free (see `Watchdog.register`); the read-write lock renews its own way.
   */
  protected registerHold(owner: string): WatchdogHold {
    const hold = this.core.watchdog.register(this.renewal, this.name, this.key, owner, undefined, this.spareHold);
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
  protected unlockAs(ctx: LockContext, renewed?: boolean, controller?: AbortController, held?: Contextless): Promise<void> {
    const owner = this.ownerOf(ctx);
    const { observe } = this.core;
    if (observe.releasesQuietly) return this.unlockObserved(ctx, owner, renewed, controller, held);
    return observe.release(this.metricKind, this.name, this.key, owner, () => this.unlockObserved(ctx, owner, renewed, controller, held));
  }

  /**
   * `unlockAs` for `owner` (`ctx`'s), measured by the observer (see `Observer.release`); `held`: the
   * contextless hold `unlock()` marked `releasing`, unmarked when the call ends. Never throws: failures reject.
   */
  private unlockObserved(ctx: LockContext, owner: string, renewed: boolean | undefined, controller: AbortController | undefined, held: Contextless | undefined): Promise<void> {
    const inFlight = allLanded(ctx, this.holdKey);
    if (inFlight) return inFlight.then(() => this.unlockNow(ctx, owner, renewed, controller, held));
    return this.unlockNow(ctx, owner, renewed, controller, held);
  }

  /** Releases one hold of `owner` now: the watchdog stops renewing it at once, then the unlock script runs (see `Unlock`). */
  private unlockNow(ctx: LockContext, owner: string, renewed: boolean | undefined, controller: AbortController | undefined, held: Contextless | undefined): Promise<void> {
    const { core } = this;
    const kind = releasedRenewed(ctx, this.holdKey, renewed);
    const releasedAt = monotonic();
    const released = kind ? core.watchdog.release(this.key, owner) : undefined;
    try {
      core.checkOpen();
    } catch (error) {
      if (held) held.releasing = false;
      return Promise.reject(error);
    }
    const call = new Unlock(this, ctx, owner, kind, released, releasedAt, controller, core.latches.next(this.latchPrefix), this.unlockGuard(ctx), held);
    return core.executor.request('lock.unlock', call);
  }

  /**
   * Records the answer of `call` (the executor's `answered`): nil when the owner held nothing (the hold is
   * forgotten, reported lost when the watchdog renewed it, and `IllegalMonitorStateError` thrown), else one
   * hold fewer. The latch is deleted unless the guard says the script wrote none.
   */
  private unlocked(call: Unlock, answer: number | null): void {
    const { core } = this;
    const { ctx, owner, renewed, guard } = call;
    let reply = answer;
    // A guarded unlock wrote its latch only if it answered nil or 2/3, or was retried (see `unlockSource`).
    if (guard === '' || call.attempts > 1 || reply === null || Number(reply) >= 2) core.latches.release(call.latch);
    if (reply !== null && Number(reply) >= 2) reply = Number(reply) - 2;
    if (reply === null) {
      recordReleased(ctx, this.holdKey, renewed, true);
      if (call.released) core.watchdog.reportLost(call.released, call.releasedAt, call.controller);
      throw new IllegalMonitorStateError(this.name, owner);
    }
    const hold = recordReleased(ctx, this.holdKey, renewed);
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
   * `expireAsync` on each member), with the renewal script (`renewal`). Resolves to the send time (monotonic ms), or
   * `undefined` when the owner no longer holds it. A lock whose holds are not fields of its hash overrides it.
   */
  protected async setLease(ctx: LockContext, leaseMs: number): Promise<number | undefined> {
    this.core.checkOpen();
    let sentAt = 0;
    const reply = await this.core.executor.run(
      'lock.setLease',
      () => {
        sentAt = monotonic();
        return this.renewal.script.run(this.core.connection, [this.key], [String(leaseMs), this.ownerOf(ctx)]);
      },
      { idempotent: true, expects: this.expects },
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

  /** What a WRONGTYPE reply on this lock's key is reported as (made once: it is passed with every call). */
  protected get expects(): { key: string; kind: ObjectKind } {
    return (this.expected ??= { key: this.key, kind: this.kind });
  }

  /** Sends the read `args` of this lock's key, kind-checked (`checkedRead`: another kind's key or other data throws `WrongTypeError`). */
  private read(args: string[]): Promise<unknown> {
    this.core.checkOpen();
    const expects = this.expects;
    return this.core.executor.run(args[0], () => checkedRead(this.core.connection, expects, args), { idempotent: true, expects });
  }
}

/** Throws `InvalidArgumentError` when a time was given to a lock method without its unit. */
export const requireLockUnit = (unit: TimeUnit | undefined): TimeUnit => requireUnit(unit, 'tryLock(1, 5, "seconds")');

/** `tryLock(…)` arguments → [wait ms (0: one attempt), lease ms or undefined for the watchdog]. */
export function tryLockTimes(waitTime: number | undefined, leaseOrUnit: number | TimeUnit | undefined, unit: TimeUnit | undefined): [number, number | undefined] {
  if (waitTime === undefined) return [0, undefined];
  refuseOptionsObject(waitTime, 'waitTime', 'tryLock(1, 5, "seconds")', 'acquire(options)');
  if (unit !== undefined) refuseStringTime(leaseOrUnit, 'leaseTime', 'tryLock(0, 5, "seconds")');
  if (typeof leaseOrUnit === 'string' || leaseOrUnit === undefined) {
    return [waitMillis(waitTime, requireLockUnit(leaseOrUnit)), undefined];
  }
  const u = requireLockUnit(unit);
  return [waitMillis(waitTime, u), leaseMillis(leaseOrUnit, u)];
}
