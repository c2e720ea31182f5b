import { detachedContext, outsideContexts, owningContext, recordAcquired, recordReleased, releasedRenewed, type LockContext } from '../context.js';
import type { Core } from '../core.js';
import { IllegalMonitorStateError, InvalidArgumentError, LockAcquireTimeoutError, LockLostError } from '../errors.js';
import { auxName, mainKey } from '../keys.js';
import type { ObjectKind } from '../kinds.js';
import type { WakeRule } from '../pubsub/channels.js';
import { waitFor, type Attempt } from '../pubsub/wait.js';
import { checkOptions, leaseMillis, monotonic, waitMillis, type TimeUnit } from '../time.js';
import { clockDriftMs, type Renewal, type RenewalKind } from '../watchdog/watchdog.js';
import { LockHandle } from './handle.js';
import { ACQUIRE, FORCE_UNLOCK, RENEW, UNLOCK } from './scripts.js';

/**
 * @internal RLock's protected steps, for the objects that drive RLocks as members (MultiLock, RedLock):
 * they resolve the caller's owner once, acquire with an abort signal and get the grant's send time,
 * release by owner, build member handles and set a final lease. Not exported from the package.
 */
export interface MemberSteps {
  context(lock: RLock): LockContext;
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

/** Options of `acquire()` and `LockClient.withLock()`. Times are in `unit`, milliseconds by default. */
export interface AcquireOptions {
  /** How long to wait for the lock: 0 for one attempt; omitted, Infinity or -1 to wait until it is free. */
  waitTime?: number;
  /**
   * Lease: the lock expires this long after the acquisition (counted from when the granting attempt was
   * sent), whatever its holder does. Omitted or -1: the watchdog renews it while held.
   */
  leaseTime?: number;
  /** Unit of `waitTime` and `leaseTime`. Default `'milliseconds'`. */
  unit?: TimeUnit;
  /** Aborts the wait; the promise then rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/**
 * Guards retries of an acquisition against a lost reply: `before` is the owner's hold count before it;
 * once an attempt failed ambiguously, later attempts ask the script not to add a second hold.
 */
export interface AcquireGuard {
  readonly before: number;
  armed: boolean;
}

/** What an acquisition attempt got: the send time of the granting attempt (its lease counts from there). */
export interface Grant {
  readonly sentAt: number;
  readonly token?: bigint | undefined;
}

/** The renewal kind of every hash-based exclusive lock (RLock, fenced, spin). */
export const LOCK_RENEWAL: RenewalKind = { script: RENEW, keysPerHold: 1, argsPerHold: 1 };

/** The answer of one run of an acquire script: granted (with a fencing token for fenced locks), or the holder's PTTL. */
export type AcquireResult = { readonly granted: true; readonly token?: bigint } | { readonly granted: false; readonly ttl: number };

const GRANTED: AcquireResult = Object.freeze({ granted: true });

/** The answer of an acquire script that returns nil when granted, else the holder's PTTL (RLock, spin, fair, read-write). */
export const acquireResult = (reply: unknown): AcquireResult => (reply === null ? GRANTED : { granted: false, ttl: Number(reply) });

/** One message on a lock's channel wakes one local waiter. */
const WAKE_ONE = (): number => 1;

/**
 * A reentrant distributed lock with Redisson's `RLock` semantics.
 *
 * Redis keys: a hash at `keyPrefix + name` (field = owner id `clientId:contextId`, value = hold count;
 * field `kind` = `lock`: a name serves one kind of object at a time, see `ObjectKind`), transient unlock latches `relock:unlock:{name}:<requestId>`; channel `relock:channel:{name}` (an
 * unlock publishes `0` there; on Redis Cluster with sharded pub/sub). All share the name's hash tag.
 *
 * Ownership: inside a context (`runInContext`, `withLock`) the owner is the context that holds the
 * lock or, for a new acquisition, the innermost context; outside any context this object is the owner.
 * So concurrent tasks that share one context, or one lock object outside any context, are one owner and
 * reenter each other's hold: give each task its own context (`withLock`, `runInContext`). Create lock
 * objects with `LockClient.getLock(name)`; each call returns a new object.
 */
export class RLock {
  /** The Redis key of the lock hash. */
  readonly key: string;
  /** The channel unlocks are published on. */
  readonly channel: string;
  /** The owner used outside any context. */
  private readonly own: LockContext = detachedContext();
  /** The kind of lock, kept in its hash's `kind` field and checked by every acquisition; each variant has its own. */
  protected readonly kind: ObjectKind = 'lock';
  /** This lock's entry in a context's holds (`clientId + ' ' + key`; the read and write locks of one read-write lock differ). */
  protected readonly holdKey: string;
  private readonly latchPrefix: string;
  /** The renewal of this lock's last watchdog acquisition, for `reserveRenewal` to reuse. */
  private spareRenewal: Renewal | undefined;

  static {
    memberSteps = {
      context: (lock) => lock.context(),
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
   * with it, the lock expires `leaseTime` after the acquisition and is not renewed. Reentrant: the
   * owner's hold count rises by one, and the lock's TTL is raised to this acquisition's lease when it is
   * shorter, never lowered (Redisson resets it to the inner lease, which can cut an outer hold short).
   * Resolves once held. Throws `InvalidArgumentError` (bad time or unit), `WrongTypeError` (the key
   * holds another type, or another kind of relock object holds the name), `RedisUnavailableError`,
   * `ClientClosedError`.
   */
  async lock(leaseTime?: number, unit?: TimeUnit): Promise<void> {
    const lease = leaseTime === undefined ? undefined : leaseMillis(leaseTime, requireUnit(unit));
    await this.acquireAs(this.context(), Infinity, lease, undefined);
  }

  /**
   * Tries to acquire the lock (Redisson's `RLock.tryLock`): `tryLock()` makes exactly one attempt;
   * `tryLock(waitTime, unit)` waits up to `waitTime` with the watchdog; `tryLock(waitTime, leaseTime,
   * unit)` waits up to `waitTime` and holds for `leaseTime` without the watchdog (`-1` = watchdog).
   * A wait time of 0 makes exactly one attempt. Waiting is woken by the unlock message, with a timer on
   * the holder's TTL as fallback. Resolves to true when acquired, false when the lock stayed busy.
   * Throws `InvalidArgumentError`, `WrongTypeError`, `RedisUnavailableError` (Redis unreachable for
   * the whole wait or the retry policy), `ClientClosedError`.
   */
  tryLock(): Promise<boolean>;
  tryLock(waitTime: number, unit: TimeUnit): Promise<boolean>;
  tryLock(waitTime: number, leaseTime: number, unit: TimeUnit): Promise<boolean>;
  async tryLock(waitTime?: number, leaseOrUnit?: number | TimeUnit, unit?: TimeUnit): Promise<boolean> {
    const [wait, lease] = tryLockTimes(waitTime, leaseOrUnit, unit);
    return (await this.acquireAs(this.context(), wait, lease, undefined)) !== undefined;
  }

  /**
   * Acquires the lock and returns a handle that releases it (`release()` or `await using`), with an
   * `AbortSignal` that aborts when the lock is lost. Times are in `options.unit` (milliseconds by
   * default); without `waitTime` it waits until the lock is free (unlike `tryLock()`, which makes one
   * attempt). Throws `LockAcquireTimeoutError` when the wait time runs out, `options.signal.reason` when
   * aborted, and the errors of `tryLock`.
   */
  async acquire(options: AcquireOptions = {}): Promise<LockHandle> {
    checkOptions(options);
    const wait = waitMillis(options.waitTime, options.unit);
    const lease = leaseMillis(options.leaseTime, options.unit);
    options.signal?.throwIfAborted();
    const ctx = this.context();
    const grant = await this.acquireAs(ctx, wait, lease, options.signal);
    if (!grant) throw new LockAcquireTimeoutError(this.name, wait);
    return this.handle(ctx, grant, lease);
  }

  /**
   * Releases one hold of the caller (Redisson's `RLock.unlock()`): the hold count drops by one, and at
   * zero the lock is deleted and waiters are woken. The watchdog stops renewing at once, before Redis
   * answers. A retry after a lost reply replays the first answer (unlock latch). Throws
   * `IllegalMonitorStateError` when the caller does not hold the lock (including after its lease
   * expired: a new holder's lock is left alone), `RedisUnavailableError`, `ClientClosedError`.
   */
  unlock(): Promise<void> {
    return this.unlockAs(this.context());
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
    const deleted = await this.core.executor.run('forceUnlock', () => this.runForceUnlock(), { idempotent: true, expects: this.expects });
    return Number(deleted) === 1;
  }

  /** Runs the force-unlock script once: 1 when a lock was deleted, else 0. The fair lock overrides it. */
  protected runForceUnlock(): Promise<unknown> {
    return FORCE_UNLOCK.run(this.core.connection, [this.key], [this.releaseChannel(), this.core.connection.publishCommand, this.kind]);
  }

  /** Whether anyone holds the lock (`EXISTS` on its key). Throws `RedisUnavailableError`, `ClientClosedError`. */
  async isLocked(): Promise<boolean> {
    return Number(await this.read(['EXISTS', this.key])) === 1;
  }

  /**
   * Whether the caller's owner (see the class description) holds the lock (`HEXISTS`; Redisson's
   * `isHeldByCurrentThread`). Throws `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async isHeldByCurrentContext(): Promise<boolean> {
    return Number(await this.read(['HEXISTS', this.key, this.ownerOf(this.context())])) === 1;
  }

  /**
   * The caller's hold count (`HGET`), 0 when it does not hold the lock. Throws `WrongTypeError`,
   * `RedisUnavailableError`, `ClientClosedError`.
   */
  async getHoldCount(): Promise<number> {
    return Number((await this.read(['HGET', this.key, this.ownerOf(this.context())])) ?? 0);
  }

  /**
   * Milliseconds until the lock expires (`PTTL`): -2 when it is not held, -1 when the key has no expiry
   * (not set by relock). Throws `RedisUnavailableError`, `ClientClosedError`.
   */
  async remainTimeToLive(): Promise<number> {
    return Number(await this.read(['PTTL', this.key]));
  }

  /** The context that owns (or would own) this lock for the caller. */
  protected context(): LockContext {
    return owningContext(this.holdKey, this.own);
  }

  protected ownerOf(ctx: LockContext): string {
    return `${this.core.id}:${ctx.id}`;
  }

  /** One acquisition attempt, with retries of transient failures and the guard against lost replies. */
  protected async attempt(owner: string, leaseMs: number, guard: AcquireGuard, deadline: number | undefined, signal: AbortSignal | undefined): Promise<Attempt<Grant>> {
    this.core.checkOpen();
    let sentAt = 0;
    const result = await this.core.executor.run(
      'lock.acquire',
      async () => {
        sentAt = monotonic();
        const result = await this.runAcquire(owner, String(leaseMs), guard.armed ? String(guard.before) : '');
        if (result.granted && this.core.replicaSync) await this.confirmReplicated(owner);
        return result;
      },
      {
        idempotent: true,
        deadline,
        signal,
        expects: this.expects,
        onAmbiguous: () => (guard.armed = true),
        onLateResults: (results) => {
          if (results.some((r) => r.granted)) void this.undo(owner);
        },
      },
    );
    return result.granted ? { acquired: true, value: { sentAt, token: result.token } } : { acquired: false, retryAfterMs: result.ttl };
  }

  /**
   * Runs the acquire script once (`guard`: '' or the hold count before a lost attempt) for this lock's
   * `kind`. The fenced lock overrides it to take a token in the same script.
   */
  protected async runAcquire(owner: string, lease: string, guard: string): Promise<AcquireResult> {
    return acquireResult(await ACQUIRE.run(this.core.connection, [this.key], [lease, owner, guard, this.kind]));
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
    return waitFor({
      channels: this.core.channels,
      channel,
      rule,
      waitMs,
      subscriptionTimeoutMs: this.core.subscriptionTimeout,
      maxPollMs: this.core.watchdog.leaseMs,
      signal,
      attempt,
    });
  }

  /** Acquires for `ctx`'s owner; registers the watchdog first and records the hold in `ctx`. */
  protected async acquireAs(ctx: LockContext, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Grant | undefined> {
    const { core } = this;
    core.checkOpen();
    const owner = this.ownerOf(ctx);
    const started = monotonic();
    const renewal = leaseMs === undefined ? this.reserveRenewal(owner) : undefined;
    const lease = leaseMs ?? core.watchdog.leaseMs;
    const guard: AcquireGuard = { before: ctx.holds.get(this.holdKey)?.count ?? 0, armed: false };
    let grant: Grant | undefined;
    try {
      grant = await this.waitForLock(waitMs, signal, (deadline) => this.attempt(owner, lease, guard, deadline, signal), owner);
    } finally {
      if (renewal && !grant) core.watchdog.abandon(renewal);
    }
    if (!grant) return undefined;
    if (renewal) core.watchdog.confirm(renewal, grant.sentAt);
    const hold = recordAcquired(ctx, this.holdKey, leaseMs === undefined, monotonic());
    if (core.debug) core.log.debug({ lock: this.name, owner, holds: hold?.count, waitMs: Math.round(monotonic() - started), leaseMs: leaseMs ?? 'watchdog' }, 'lock acquired');
    return grant;
  }

  /**
   * Registers `owner`'s hold with the watchdog before its acquire is sent, reusing this lock's previous
   * renewal when it is free (see `Watchdog.reserve`); the read-write lock renews its own way.
   */
  protected reserveRenewal(owner: string): Renewal {
    const spare = this.spareRenewal?.owner === owner ? this.spareRenewal : undefined;
    const renewal = this.core.watchdog.reserve(LOCK_RENEWAL, this.name, this.key, owner, spare?.keys ?? [this.key], spare?.args ?? [owner], spare);
    this.spareRenewal = renewal;
    return renewal;
  }

  /**
   * Releases one hold of `ctx`'s owner: the innermost one, or one of the kind `renewed` (true: renewed by
   * the watchdog, false: with a lease) when a handle knows it. Only releasing a renewed hold takes one
   * count off the watchdog's, so releasing an inner leased hold never stops renewing an outer one.
   */
  protected async unlockAs(ctx: LockContext, renewed?: boolean): Promise<void> {
    const { core } = this;
    const owner = this.ownerOf(ctx);
    const kind = releasedRenewed(ctx, this.holdKey, renewed);
    if (kind) core.watchdog.release(this.key, owner);
    core.checkOpen();
    const latch = core.latches.next(this.latchPrefix);
    let reply: unknown;
    try {
      reply = await core.executor.run('lock.unlock', (attempt) => this.runUnlock(owner, latch, attempt), { idempotent: true, expects: this.expects });
    } finally {
      core.latches.release(latch);
    }
    if (reply === null) {
      recordReleased(ctx, this.holdKey, kind, true);
      throw new IllegalMonitorStateError(this.name, owner);
    }
    const hold = recordReleased(ctx, this.holdKey, kind);
    if (core.debug && Number(reply) === 1) {
      core.log.debug({ lock: this.name, owner, holdMs: hold ? Math.round(monotonic() - hold.since) : undefined }, 'lock released');
    }
  }

  /**
   * Runs the unlock script once (`attempt` > 1: a retry, which replays the latch): nil when `owner` does not
   * hold the lock, 0 when holds remain, 1 when released. Fair and read-write locks override it.
   */
  protected runUnlock(owner: string, latch: string, attempt: number): Promise<unknown> {
    const { connection, latches } = this.core;
    return UNLOCK.run(connection, [this.key, latch], [owner, this.releaseChannel(), connection.publishCommand, latches.ttlArg, attempt > 1 ? '1' : '0']);
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
    return Number((reply as unknown[])[0]) === 1 ? sentAt : undefined;
  }

  /** `syncReplicas`: a grant no replica acknowledged is undone before the error goes up (Redisson #4822). */
  private async confirmReplicated(owner: string): Promise<void> {
    try {
      await this.core.replicaSync!.confirm(this.key);
    } catch (error) {
      await this.undo(owner);
      throw error;
    }
  }

  /** Undoes an acquisition that went through after its caller gave up. */
  private async undo(owner: string): Promise<void> {
    const latch = this.core.latches.next(this.latchPrefix);
    try {
      await this.core.executor.run('lock.unlock', (attempt) => this.runUnlock(owner, latch, attempt), { idempotent: true });
    } catch (error) {
      this.core.log.warn({ lock: this.name, owner, err: error }, 'could not undo a late acquisition; it expires with its lease');
    } finally {
      this.core.latches.release(latch);
    }
  }

  /** Builds the handle of an acquisition by `ctx`. */
  protected handle(ctx: LockContext, grant: Grant, leaseMs: number | undefined): LockHandle {
    const owner = this.ownerOf(ctx);
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const renewal = leaseMs === undefined ? this.core.watchdog.get(this.key, owner) : undefined;
    renewal?.controllers.add(controller);
    if (leaseMs !== undefined) {
      timer = outsideContexts(() =>
        // Ends a little before Redis can expire the key (clock drift and late timers), as the watchdog does.
        setTimeout(() => controller.abort(new LockLostError(this.name, 'lease-ended')), Math.max(0, grant.sentAt + leaseMs - clockDriftMs(leaseMs) - monotonic())),
      );
      timer.unref();
    }
    return new LockHandle(this.name, owner, controller.signal, leaseMs, grant.token, async () => {
      if (timer) clearTimeout(timer);
      renewal?.controllers.delete(controller);
      await this.unlockAs(ctx, leaseMs === undefined);
    });
  }

  /** What a WRONGTYPE reply on this lock's key is reported as. */
  protected get expects(): { key: string; kind: ObjectKind } {
    return { key: this.key, kind: this.kind };
  }

  private read(args: string[]): Promise<unknown> {
    this.core.checkOpen();
    return this.core.executor.run(args[0]!, () => this.core.connection.send(this.key, args), { idempotent: true, expects: this.expects });
  }
}

/** Throws `InvalidArgumentError` when a time was given without its unit. */
export function requireUnit(unit: TimeUnit | undefined): TimeUnit {
  if (unit === undefined) throw new InvalidArgumentError('unit', 'a time unit is required with a time, e.g. tryLock(1, 5, "seconds")');
  return unit;
}

/** `tryLock(…)` arguments → [wait ms (0: one attempt), lease ms or undefined for the watchdog]. */
export function tryLockTimes(waitTime: number | undefined, leaseOrUnit: number | TimeUnit | undefined, unit: TimeUnit | undefined): [number, number | undefined] {
  if (waitTime === undefined) return [0, undefined];
  if (typeof leaseOrUnit === 'string' || leaseOrUnit === undefined) {
    return [waitMillis(waitTime, requireUnit(leaseOrUnit as TimeUnit | undefined)), undefined];
  }
  const u = requireUnit(unit);
  return [waitMillis(waitTime, u), leaseMillis(leaseOrUnit, u)];
}
