import { newId } from '../context.js';
import type { Core } from '../core.js';
import { InvalidArgumentError, PermitAcquireTimeoutError, PermitNotHeldError } from '../errors.js';
import { auxName, mainKey } from '../keys.js';
import { clientWait, type Attempt } from '../pubsub/wait.js';
import { runObjectScript, type ObjectRunOptions, type ObjectScript } from '../redis/object-script.js';
import { acquireOutcome, permitCount, permitDelta, permitTotal, positiveTime, requirePermitUnit, tookPermits, WAKE_BY_PERMITS } from '../semaphore/permits.js';
import { optionKeys } from '../option-keys.js';
import { checkOptions, leaseMillis, optionLease, optionWait, refuseOptionsObject, refuseStringTime, timeFields, waitMillis, type TimeUnit } from '../time.js';
import { HoldSignal, type RenewalKind } from '../watchdog/hold.js';
import { ObjectKeys } from '../object-keys.js';
import { warnIfUnset } from '../semaphore/unset.js';
import { PermitHandle } from './handle.js';
import { ACQUIRE, ADD_LIMIT, COUNTS, LEASE_TIME, RELEASE, RENEW, SET_LIMIT, TRY_SET_LIMIT, UPDATE_LEASE } from './scripts.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RPermitExpirableSemaphore`. */
    'expirable-semaphore': true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RPermitExpirableSemaphore`. */
    permit_expirable_semaphore: true;
  }
}

/**
 * Options of `RPermitExpirableSemaphore.acquire()`. Give each time in milliseconds (`waitMs`, `leaseMs`)
 * or with its unit (`waitTime`/`leaseTime` and `unit`); `{ leaseTime: 5 }` alone is refused.
 */
export interface PermitAcquireOptions {
  /** Permits to take at once (each gets its own id). Default 1. */
  permits?: number;
  /** How long to wait, in milliseconds: 0 for one attempt; omitted or `Infinity` to wait until enough permits are free; negative values are refused. */
  waitMs?: number;
  /**
   * Lease in milliseconds: the permits expire this long after the acquisition, in Redis server time,
   * whatever their holder does. Omitted or -1: the watchdog renews them while held.
   */
  leaseMs?: number;
  /** `waitMs` in `unit` (required with it). Not together with `waitMs`. */
  waitTime?: number;
  /** `leaseMs` in `unit` (required with it). Not together with `leaseMs`. */
  leaseTime?: number;
  /** Unit of `waitTime` and `leaseTime`; required with them, refused without them. */
  unit?: TimeUnit;
  /** Aborts the wait; the promise then rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** The keys of `PermitAcquireOptions` (any other key is refused: `refuseUnknownKeys`). */
const ACQUIRE_KEYS = optionKeys<PermitAcquireOptions>({ ...timeFields(), permits: true });

/** The renewal kind of expirable permits: one hold per permit id, renewed by `permits.renew`. */
export const PERMIT_RENEWAL: RenewalKind = { script: RENEW, keysPerHold: 1 };

/** Permit ids with the send time of the attempt that granted them (their lease counts from there). */
interface Grant {
  readonly ids: readonly string[];
  readonly sentAt: number;
}

/**
 * "At most N at the same time", safe against crashed holders: Redisson's `RPermitExpirableSemaphore`,
 * with expiries in Redis server time. Each acquired permit has an id and an expiry; an expired permit
 * is free again. A permit taken with a lease expires at the end of it; one taken without a lease lives
 * `lockWatchdogTimeout` and the watchdog renews it every third of that while this process runs, so a
 * crashed or frozen holder's permit comes back within one `lockWatchdogTimeout`.
 *
 * Redis keys: a sorted set at `keyPrefix + name` (member = permit id, score = expiry in ms of Redis
 * server time, from `TIME` inside the scripts, never the client's clock; its TTL covers the longest
 * lease, so it vanishes when every holder is gone), a string `relock:permits:{name}` holding the
 * number of permits (missing = 0), transient request latches `relock:unlock:{name}:<requestId>`;
 * channel `relock:channel:{name}:permits` (releases and reclaims publish the free count). All share
 * the name's hash tag. Every script first reclaims expired permits, then checks and changes in one step.
 *
 * Waiting: woken by a release message, or at the nearest permit expiry (a crashed holder publishes
 * nothing). Waiters of one process are served in arrival order; across processes it is not fair.
 * Create objects with `LockClient.getPermitExpirableSemaphore(name)`.
 */
export class RPermitExpirableSemaphore {
  /** The Redis key of the sorted set of permits held. */
  readonly key: string;
  /** The Redis key holding the number of permits. */
  readonly permitsKey: string;
  /** The channel releases are published on. */
  readonly channel: string;
  private readonly keys: ObjectKeys;
  /** The keys the renewal script gets for a permit of this semaphore (see `Watchdog.register`), made on first use. */
  private renewalKeys: readonly string[] | undefined;

  /** @internal Use `LockClient.getPermitExpirableSemaphore(name)`. */
  constructor(
    private readonly core: Core,
    /** The name given to `getPermitExpirableSemaphore()`. */
    readonly name: string,
  ) {
    this.key = mainKey(core.keyPrefix, name);
    this.permitsKey = auxName(core.keyPrefix, 'permits', this.key);
    this.channel = auxName(core.keyPrefix, 'channel', this.key, 'permits');
    this.keys = new ObjectKeys(core, 'expirable-semaphore', this.key, [this.permitsKey], this.channel, '');
  }

  /** The name given to `getPermitExpirableSemaphore()` (Redisson's `getName()`). */
  getName(): string {
    return this.name;
  }

  /**
   * Acquires permits and returns a handle that releases them (`release()` or `await using`), with an
   * `AbortSignal` that aborts when a permit is lost. Without a wait time it waits until enough permits
   * are free; without a lease the watchdog renews the permits until released. A number is the count of
   * permits (`acquire(3)` is `acquire({ permits: 3 })`, as Redisson's `acquire(permits)` and
   * `RSemaphore.acquire(3)`). While the semaphore's permits were never set it waits (until some process
   * sets them) and logs a warning once per name through the client's logger. Throws
   * `PermitAcquireTimeoutError` when the wait time runs out, `signal.reason` when aborted,
   * `InvalidArgumentError`, `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async acquire(permitsOrOptions: number | PermitAcquireOptions = {}): Promise<PermitHandle> {
    const options = typeof permitsOrOptions === 'number' ? { permits: permitsOrOptions } : checkOptions(permitsOrOptions, ACQUIRE_KEYS);
    const permits = permitCount(options.permits ?? 1);
    const wait = optionWait(options);
    const lease = optionLease(options);
    options.signal?.throwIfAborted();
    const grant = await this.grant(permits, wait, lease, options.signal);
    if (!grant) throw new PermitAcquireTimeoutError(this.name, permits, wait);
    return this.handle(grant, lease);
  }

  /**
   * Tries to acquire (Redisson's `tryAcquire`) and resolves to the permit id, or `undefined` when too
   * few permits were free for the whole wait: `tryAcquire()` makes exactly one attempt with the
   * watchdog; `tryAcquire(permits)` makes one attempt at `permits` permits with the watchdog and resolves
   * to their ids (Redisson's `tryAcquire(int permits)`; a single number is a count of permits, as in
   * `RSemaphore.tryAcquire(3)`, never a time: a time always comes with its unit); `tryAcquire(waitTime, unit)` waits up to `waitTime` (<= 0, such as -1: one attempt, as in Redisson) with the watchdog;
   * `tryAcquire(waitTime, leaseTime, unit)` gives the permit a lease (-1: watchdog);
   * `tryAcquire(permits, waitTime, leaseTime, unit)` takes several permits at once and resolves to their
   * ids. A watchdog permit is renewed until `release(id)` on any object of this client. Throws
   * `InvalidArgumentError`, `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  tryAcquire(): Promise<string | undefined>;
  tryAcquire(permits: number): Promise<string[] | undefined>;
  tryAcquire(waitTime: number, unit: TimeUnit): Promise<string | undefined>;
  tryAcquire(waitTime: number, leaseTime: number, unit: TimeUnit): Promise<string | undefined>;
  tryAcquire(permits: number, waitTime: number, leaseTime: number, unit: TimeUnit): Promise<string[] | undefined>;
  async tryAcquire(first?: number, second?: number | TimeUnit, third?: number | TimeUnit, fourth?: TimeUnit): Promise<string | string[] | undefined> {
    if (first === undefined) return (await this.grant(1, 0, undefined, undefined))?.ids[0];
    refuseOptionsObject(first, 'waitTime', 'tryAcquire(1, 60, "seconds")', 'acquire(options)');
    if (second === undefined && third === undefined && fourth === undefined) {
      const grant = await this.grant(permitCount(first), 0, undefined, undefined);
      return grant && [...grant.ids];
    }
    if (third !== undefined && typeof third !== 'string') refuseStringTime(second, 'waitTime', 'tryAcquire(2, 5, 60, "seconds")');
    if (typeof third === 'string') refuseStringTime(second, 'leaseTime', 'tryAcquire(0, 60, "seconds")');
    if (fourth !== undefined) refuseStringTime(third, 'leaseTime', 'tryAcquire(2, 5, 60, "seconds")');
    if (typeof second === 'string') return (await this.grant(1, waitMillis(first, second), undefined, undefined))?.ids[0];
    if (typeof third === 'string' || third === undefined) {
      const unit = requirePermitUnit(third);
      return (await this.grant(1, waitMillis(first, unit), leaseMillis(second, unit), undefined))?.ids[0];
    }
    const unit = requirePermitUnit(fourth);
    const grant = await this.grant(permitCount(first), waitMillis(second, unit), leaseMillis(third, unit), undefined);
    return grant && [...grant.ids];
  }

  /**
   * Releases permits by id (Redisson's `release(permitId)` / `release(permitIds)`), all or nothing, and
   * wakes waiters. The watchdog stops renewing them at once. A retry after a lost reply replays the first
   * answer (request latch). Throws `PermitNotHeldError` when an id is not held (never issued, already
   * released, or expired: then nothing was released), `InvalidArgumentError` (no ids, empty or repeated
   * ids), `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async release(ids: string | readonly string[]): Promise<void> {
    const list = idList(ids);
    const gone = await this.releaseIds(list);
    if (gone.length > 0) throw this.notHeld(gone);
  }

  /**
   * Like `release`, but resolves to false instead of throwing when an id is not held (Redisson's
   * `tryRelease`); nothing is released then. Resolves to true when every permit was released. Throws
   * `InvalidArgumentError`, `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async tryRelease(ids: string | readonly string[]): Promise<boolean> {
    return (await this.releaseIds(idList(ids))).length === 0;
  }

  /**
   * Sets the expiry of held permits to `leaseTime` (in `unit`) from now in Redis server time (Redisson's
   * `updateLeaseTime`), all or nothing; the watchdog stops renewing them. Resolves to true when every
   * permit was held and updated, false when one was not (none changed). For permits held through a
   * handle use `PermitHandle.updateLeaseTime`, which also moves the handle signal's timer. Throws
   * `InvalidArgumentError`, `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async updateLeaseTime(ids: string | readonly string[], leaseTime: number, unit: TimeUnit): Promise<boolean> {
    return (await this.updateIds(idList(ids), positiveLease(leaseTime, requirePermitUnit(unit)))).length === 0;
  }

  /**
   * Free permits: the limit minus the permits held, after reclaiming expired ones (negative when the limit
   * was lowered below them). Throws `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async availablePermits(): Promise<number> {
    const [limit, held] = await this.counts();
    return limit - held;
  }

  /** Permits held (unexpired), after reclaiming expired ones (`ZCARD`). Throws as `availablePermits`. */
  async acquiredPermits(): Promise<number> {
    return (await this.counts())[1];
  }

  /** The number of permits (the limit), held or free (Redisson's `getPermits`). Throws as `availablePermits`. */
  async getPermits(): Promise<number> {
    return (await this.counts())[0];
  }

  /**
   * Sets the number of permits to `permits` (Redisson's `setPermits`), whatever it was; permits held
   * stay held, so fewer may be free than expected until they are released. Wakes waiters. Throws
   * `InvalidArgumentError` (not an integer >= 0), `WrongTypeError`, `RedisUnavailableError`,
   * `ClientClosedError`.
   */
  async setPermits(permits: number): Promise<void> {
    await this.run('permits.setPermits', SET_LIMIT, { total: String(permitTotal(permits)) });
  }

  /**
   * Sets the number of permits if it is not set yet (Redisson's `trySetPermits`): resolves to true when
   * set, false when a number was already set. With `timeToLive` and `unit` (Redisson's
   * `trySetPermits(permits, Duration)`) the number of permits (`relock:permits:{name}`) is deleted after
   * that time: no permit can be acquired afterwards until it is set again; permits held stay held until
   * released or expired. Throws as `setPermits`, and `InvalidArgumentError` for a time to live that is not
   * positive or has no unit.
   */
  async trySetPermits(permits: number, timeToLive?: number, unit?: TimeUnit): Promise<boolean> {
    const ttl = timeToLive === undefined ? '' : String(positiveTime(timeToLive, unit, 'timeToLive'));
    return this.run('permits.trySetPermits', TRY_SET_LIMIT, { total: String(permitTotal(permits)), ttlMs: ttl });
  }

  /**
   * The time left of a held permit's lease in ms (Redisson's `getLeaseTime(permitId)`), in Redis server
   * time: for a permit renewed by the watchdog, the time to its current expiry (at most
   * `lockWatchdogTimeout`). Throws `PermitNotHeldError` when the permit is not held (never issued,
   * released, or expired), `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async getLeaseTime(permitId: string): Promise<number> {
    if (typeof permitId !== 'string' || permitId === '') throw new InvalidArgumentError('permitId', 'must be a permit id (a non-empty string from acquire or tryAcquire)');
    const ms = await this.run('permits.getLeaseTime', LEASE_TIME, { permitId });
    if (ms < 0) throw new PermitNotHeldError(this.name, [permitId], 1);
    return ms;
  }

  /**
   * Whether the semaphore exists in Redis (Redisson's `isExists`; `EXISTS` of its permits set and its
   * number of permits). Throws `RedisUnavailableError`, `ClientClosedError`.
   */
  isExists(): Promise<boolean> {
    return this.keys.isExists();
  }

  /**
   * Deletes the semaphore (Redisson's `delete`): its number of permits and every held permit, in a script
   * that first checks the kind. Holders are not told until their next renewal or release (a watchdog
   * permit is then reported lost; `release(id)` throws `PermitNotHeldError`). Resolves to true when
   * something was deleted. Throws `WrongTypeError` (another kind holds the name; nothing deleted),
   * `RedisUnavailableError`, `ClientClosedError`.
   */
  delete(): Promise<boolean> {
    return this.keys.delete();
  }

  /**
   * Sets a time to live on the semaphore's keys (Redisson's `expire`): they are deleted `time` `unit`
   * from now, as by `delete()`, unless a later acquisition lengthens the permits set's TTL to cover its
   * lease. Resolves to true when a key existed. Throws `InvalidArgumentError` (not a positive time, no
   * unit), `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  expire(time: number, unit: TimeUnit): Promise<boolean> {
    return this.keys.expire(time, unit);
  }

  /**
   * Adds to the number of permits, or removes when negative (Redisson's `addPermits`), and wakes waiters.
   * Throws `InvalidArgumentError` (not an integer) and the errors of `setPermits`.
   */
  async addPermits(permits: number): Promise<void> {
    await this.run('permits.addPermits', ADD_LIMIT, { delta: String(permitDelta(permits)) });
  }

  /** Acquires `permits` fresh ids, registering them with the watchdog first when there is no lease. */
  private async grant(permits: number, waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Grant | undefined> {
    const { core } = this;
    core.checkOpen();
    const base = `${core.id}-${newId()}`;
    const ids = permits === 1 ? [base] : Array.from({ length: permits }, (_, i) => `${base}:${i + 1}`);
    const keys = (this.renewalKeys ??= [this.key]);
    const holds = leaseMs === undefined ? ids.map((id) => core.watchdog.register(PERMIT_RENEWAL, this.name, this.key, id, keys)) : [];
    const lease = String(leaseMs ?? core.watchdog.leaseMs);
    let sentAt: number | undefined;
    try {
      sentAt = await clientWait(core, {
        channel: this.channel,
        rule: WAKE_BY_PERMITS,
        need: permits,
        waitMs,
        signal,
        attempt: (deadline) => this.attempt(ids, { leaseMs: lease, count: String(permits), idBase: base }, deadline, signal),
        observed: { observer: core.observe, kind: 'permit_expirable_semaphore', name: this.name, key: this.key, holders: ids },
      });
    } finally {
      if (sentAt === undefined) for (const hold of holds) hold.abandon();
    }
    if (sentAt === undefined) return undefined;
    for (const hold of holds) hold.confirm(sentAt);
    return { ids, sentAt };
  }

  private async attempt(ids: readonly string[], args: { leaseMs: string; count: string; idBase: string }, deadline: number | undefined, signal: AbortSignal | undefined): Promise<Attempt<number>> {
    let sentAt = 0;
    const take = await this.run('permits.acquire', ACQUIRE, args, {
      deadline,
      signal,
      onSend: (at) => (sentAt = at),
      onLateResults: (replies) => {
        return tookPermits(replies) ? this.undo(ids) : undefined;
      },
    });
    warnIfUnset(this.core, 'expirable-semaphore', this.name, take);
    return acquireOutcome(take, sentAt);
  }

  /** Releases permits that an attempt took after its caller gave up. */
  private async undo(ids: readonly string[]): Promise<void> {
    try {
      await this.run('permits.release', RELEASE, { ids });
    } catch (error) {
      this.core.log.warn({ semaphore: this.name, permits: ids.length, err: error }, 'could not release permits taken after the caller gave up; they expire with their lease');
    }
  }

  /** Releases `ids` all or nothing; resolves to the ids that were not held (empty: all released). Observed (`Observer.release`). */
  private releaseIds(ids: readonly string[]): Promise<string[]> {
    return this.core.observe.release('permit_expirable_semaphore', this.name, this.key, ids, () => this.releaseObserved(ids), (gone) => gone.length === 0);
  }

  /**
   * `releaseIds`, unobserved. The watchdog stops renewing the permits at once (`Watchdog.suspend`): for
   * good once released (or when the call failed); those still held when others were not are renewed again.
   */
  private async releaseObserved(ids: readonly string[]): Promise<string[]> {
    const resume = this.core.watchdog.suspend(this.key, ids);
    let gone: string[] | undefined;
    try {
      gone = notHeld(ids, await this.run('permits.release', RELEASE, { ids }));
    } finally {
      resume(ended(gone ?? []));
    }
    return gone;
  }

  /**
   * Gives `ids` a lease of `leaseMs` from now, all or nothing; resolves to the ids that were not held. The
   * watchdog stops renewing the permits when they got the lease, and renews them again when the call changed nothing.
   */
  private async updateIds(ids: readonly string[], leaseMs: number, onSend?: (at: number) => void): Promise<string[]> {
    const resume = this.core.watchdog.suspend(this.key, ids);
    let gone: string[] | undefined;
    try {
      gone = notHeld(ids, await this.run('permits.updateLeaseTime', UPDATE_LEASE, { leaseMs: String(leaseMs), ids }, { onSend }));
    } finally {
      resume(gone === undefined ? () => false : ended(gone));
    }
    return gone;
  }

  /**
   * Builds the handle of a grant; its signal follows the watchdog, or the end of the lease (and aborts
   * with `'shutdown'` when the client shuts down while the permits are held).
   */
  private handle(grant: Grant, leaseMs: number | undefined): PermitHandle {
    const hold = new HoldSignal(this.core.watchdog, this.name, this.key, grant.ids);
    if (leaseMs === undefined) hold.followRenewals();
    else hold.followLease(grant.sentAt, leaseMs);
    return new PermitHandle(this.name, grant.ids, hold.signal, leaseMs, {
      release: async (disposing) => {
        hold.stop(false);
        const gone = await this.releaseIds(grant.ids);
        if (gone.length === 0) return;
        if (!disposing) throw this.notHeld(gone);
        const left = grant.ids.filter((id) => !gone.includes(id));
        if (left.length > 0) await this.releaseIds(left);
      },
      updateLeaseTime: async (leaseTime, unit) => {
        const lease = positiveLease(leaseTime, requirePermitUnit(unit));
        let sentAt = 0;
        const gone = await this.updateIds(grant.ids, lease, (at) => (sentAt = at));
        if (gone.length > 0) throw this.notHeld(gone);
        hold.followLease(sentAt, lease);
        return lease;
      },
    });
  }

  private async counts(): Promise<[limit: number, held: number]> {
    return this.run('permits.counts', COUNTS, {});
  }

  private notHeld(gone: readonly string[]): PermitNotHeldError {
    return new PermitNotHeldError(this.name, gone.slice(0, 100), gone.length);
  }

  /** Runs one of the permit scripts with `values` (its keys are added) on the semaphore's channel. */
  private run<V, R>(operation: string, script: ObjectScript<V, R>, values: Omit<V, 'permits' | 'limit'>, options: ObjectRunOptions<R> = {}): Promise<R> {
    return runObjectScript(this.core, operation, script, { ...values, permits: this.key, limit: this.permitsKey } as V, this.channel, {
      ...options,
      expects: { key: this.key, kind: 'expirable-semaphore' },
    });
  }

}

/**
 * Which permits a release or lease change ended (for `Watchdog.suspend`): all when none was `gone` (the
 * call applied to all), else the gone ones only (all or nothing: the others are still held as they were).
 */
function ended(gone: readonly string[]): (id: string) => boolean {
  if (gone.length === 0) return () => true;
  const set = new Set(gone);
  return (id) => set.has(id);
}

/** The ids not held, from a release or lease-change reply (the positions, from 1, of the ids not held, or a count when all were). */
function notHeld(ids: readonly string[], reply: number[] | number): string[] {
  return Array.isArray(reply) ? reply.map((position) => ids[position - 1]) : [];
}

/** One id or a list of them: non-empty strings, at least one, no repeats. */
function idList(ids: string | readonly string[]): readonly string[] {
  const list: readonly unknown[] = typeof ids === 'string' ? [ids] : ids;
  if (!Array.isArray(list) || list.length === 0) throw new InvalidArgumentError('ids', 'give a permit id or a non-empty array of permit ids');
  for (const id of list) {
    if (typeof id !== 'string' || id.length === 0) throw new InvalidArgumentError('ids', `permit ids are non-empty strings; got ${typeof id === 'string' ? 'an empty string' : typeof id}`);
  }
  if (new Set(list).size !== list.length) throw new InvalidArgumentError('ids', 'the same permit id is given twice');
  return list as readonly string[];
}

/** A lease for `updateLeaseTime`: positive (the watchdog cannot be chosen here). */
function positiveLease(leaseTime: number, unit: TimeUnit | undefined): number {
  const lease = leaseMillis(leaseTime, unit);
  if (lease === undefined) throw new InvalidArgumentError('leaseTime', 'must be a positive time; -1 (watchdog) is not accepted here');
  return lease;
}
