import { owningContext, type LockContext } from '../context.js';
import type { Core } from '../core.js';
import { LockUpgradeError } from '../errors.js';
import { auxName, mainKey } from '../keys.js';
import { RLock } from '../lock/lock.js';
import type { AcquireResult } from '../lock/scripts.js';
import type { RenewalKind, WatchdogHold } from '../watchdog/hold.js';
import { RW_ACQUIRE, RW_FORCE_UNLOCK, RW_IS_LOCKED, RW_RENEW, RW_UNLOCK } from './scripts.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RReadWriteLock`. */
    'read-write-lock': true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RReadLock`, the shared side of an `RReadWriteLock`. */
    read_lock: true;
    /** `RWriteLock`, the exclusive side of an `RReadWriteLock`. */
    write_lock: true;
  }
}

/** Renewal of read and write holds: each hold of the owner's field gets its own lease extended. */
export const READ_WRITE_RENEWAL: RenewalKind = { script: RW_RENEW, keysPerHold: 2 };

/** `1` (a write unlock, a downgrade, a force unlock) wakes every local waiter; `0` (the last reader left) one. */
const READ_WRITE_WAKE = (message: string): number => (message === '1' ? Infinity : 1);

const WRITE_SUFFIX = ':write';

/** What the read and write locks of one `RReadWriteLock` share. */
interface Shared {
  readonly leasesKey: string;
  /** The keys the renewal script gets for a hold of either side (`[key, leasesKey]`). */
  readonly renewalKeys: readonly string[];
  readonly channel: string;
  readonly readHoldKey: string;
  readonly writeHoldKey: string;
}

/**
 * A read-write lock (Redisson's `RReadWriteLock`): any number of owners may hold `readLock()` together,
 * `writeLock()` excludes every other owner, readers and writers. Both are reentrant and have `RLock`'s
 * API (lease or watchdog, `acquire()` handles, `AbortSignal`s, typed errors).
 *
 * - Downgrade: an owner holding the write lock may take the read lock; after it releases the write lock
 *   it keeps the read lock (and other readers may enter). Upgrade (read, then write) throws
 *   `LockUpgradeError` instead of waiting for itself forever.
 * - Leases: each hold has its own lease; the lock lives as long as its longest live hold, so a shorter
 *   inner lease never shortens an outer hold. The watchdog of a client renews only that client's own
 *   holds: the holds of a client that crashed end with their leases and do not block writers.
 * - Waking: a write unlock wakes every waiting reader at once (and the writers, who retry); the last
 *   reader's unlock wakes one waiter per process (a writer).
 * - Not fair: readers keep entering while the lock is in read mode, so a steady flow of readers can keep
 *   a writer waiting (as in Redisson).
 *
 * Ownership as `RLock`: inside a context the owner is the context that already holds either side, else
 * the innermost context. Outside any context each acquisition is an owner of its own (see `RLock`): a
 * contextless write lock is a mutex, contextless read holds are separate readers (a task that holds a read
 * and takes it again gets `ReentryNeedsContextError`), and a downgrade (or an upgrade attempt) needs a
 * context; without one, taking the read lock while this task holds the write lock waits for itself.
 *
 * Redis keys (one slot): the hash `keyPrefix + name` (`mode` → `read` | `write`, `<owner>` → read holds,
 * `<owner>:write` → write holds) and `relock:leases:{name}` (ZSET, one member per hold → its deadline in
 * Redis server time); unlock latches as `RLock`. Channel `relock:rwlock:{name}`: `1` wakes every waiter,
 * `0` one. Create objects with `LockClient.getReadWriteLock(name)`.
 */
export class RReadWriteLock {
  /** The Redis key of the lock hash. */
  readonly key: string;
  private readonly read: RReadLock;
  private readonly write: RWriteLock;

  /** @internal Use `LockClient.getReadWriteLock(name)`. */
  constructor(
    core: Core,
    /** The name given to `getReadWriteLock()`. */
    readonly name: string,
  ) {
    this.key = mainKey(core.keyPrefix, name);
    const leasesKey = auxName(core.keyPrefix, 'leases', this.key);
    const shared: Shared = {
      leasesKey,
      renewalKeys: [this.key, leasesKey],
      channel: auxName(core.keyPrefix, 'rwlock', this.key),
      readHoldKey: `${core.id} ${this.key} read`,
      writeHoldKey: `${core.id} ${this.key} write`,
    };
    this.read = new RReadLock(core, name, shared);
    this.write = new RWriteLock(core, name, shared);
  }

  /** The name given to `getReadWriteLock()` (Redisson's `getName()`). */
  getName(): string {
    return this.name;
  }

  /** The shared side (Redisson's `readLock()`); the same object on every call. */
  readLock(): RReadLock {
    return this.read;
  }

  /** The exclusive side (Redisson's `writeLock()`); the same object on every call. */
  writeLock(): RWriteLock {
    return this.write;
  }
}

/** What the two sides have in common: keys, ownership, renewal, waiting, unlock. */
abstract class ReadWriteSide extends RLock {
  /** The Redis key of the holds' leases (ZSET member `<field>:<n>` → deadline, server time in ms). */
  readonly leasesKey: string;

  /** @internal */
  override readonly holdKey: string;
  protected override readonly kind = 'read-write-lock';
  /** @internal Each hold has its own lease in the leases set: a `PEXPIRE` of the hash cannot extend one. */
  override readonly extendable: boolean = false;

  constructor(
    core: Core,
    name: string,
    protected readonly shared: Shared,
    private readonly side: 'read' | 'write',
  ) {
    super(core, name);
    this.leasesKey = shared.leasesKey;
    this.holdKey = side === 'read' ? shared.readHoldKey : shared.writeHoldKey;
  }

  /** The channel of both sides (`relock:rwlock:{name}`). */
  override get channel(): string {
    return this.shared.channel;
  }

  /**
   * Whether this side is locked by anyone (Redisson's `isLocked`): the write lock when the lock is in
   * write mode; the read lock when it is in read mode or its writer also holds a read hold.
   */
  override async isLocked(): Promise<boolean> {
    this.core.checkOpen();
    return this.core.executor.run('readWriteLock.isLocked', () => RW_IS_LOCKED.run(this.core.connection, { lock: this.key, side: this.side }), {
      idempotent: true,
      expects: this.expects,
    });
  }

  /**
   * Deletes the whole read-write lock if it is in this side's mode (the read lock: read mode; the write
   * lock: write mode), whoever holds it, and wakes every waiter (Redisson's `forceUnlock`). Resolves to
   * true when it was deleted; this client's watchdog then stops renewing its holds of it.
   */
  override async forceUnlock(): Promise<boolean> {
    this.core.checkOpen();
    const { connection } = this.core;
    const deleted = await this.core.executor.run(
      'readWriteLock.forceUnlock',
      () => RW_FORCE_UNLOCK.run(connection, { lock: this.key, leases: this.leasesKey, side: this.side, channel: this.channel, publishCommand: connection.publishCommand }),
      { idempotent: true, expects: this.expects },
    );
    if (deleted) this.core.watchdog.forget(this.key);
    return deleted;
  }

  /** @internal The context that already holds either side, else the innermost context; none outside any context. */
  override context(): LockContext | undefined {
    return owningContext(this.shared.readHoldKey, this.shared.writeHoldKey);
  }

  /** @internal */
  override registerHold(owner: string): WatchdogHold {
    return this.core.watchdog.register(READ_WRITE_RENEWAL, this.name, this.key, owner, this.shared.renewalKeys);
  }

  /** @internal */
  override async runAcquire(owner: string, lease: string, guard: string): Promise<AcquireResult> {
    const reply = await RW_ACQUIRE.run(this.core.connection, {
      lock: this.key,
      leases: this.leasesKey,
      leaseMs: lease,
      field: owner,
      guard,
      side: this.side,
      writeField: this.writeField(owner),
      readField: this.readField(owner),
    });
    if (reply === 'upgrade') throw new LockUpgradeError(this.name, this.readField(owner));
    return reply;
  }

  /** @internal */
  override readonly wakeRule = READ_WRITE_WAKE;

  /** @internal */
  override runUnlock(owner: string, latch: string, attempt: number, guard: string): Promise<number | null> {
    const { connection, latches } = this.core;
    return RW_UNLOCK.run(connection, {
      lock: this.key,
      leases: this.leasesKey,
      latch,
      field: owner,
      side: this.side,
      channel: this.channel,
      publishCommand: connection.publishCommand,
      latchTtl: latches.ttlArg,
      retry: attempt > 1 ? '1' : '0',
      guard,
    });
  }

  /** The hash field of the write holds of the owner whose field on this side is `owner`. */
  protected abstract writeField(owner: string): string;

  /** Write side: the hash field of the read holds of the owner whose write field is `owner`; '' on the read side. */
  protected abstract readField(owner: string): string;
}

/**
 * The shared side of an `RReadWriteLock` (Redisson's `RedissonReadLock`), with `RLock`'s API. Granted
 * when the lock is free, in read mode, or write-locked by the same owner (downgrade). Each read hold has
 * its own lease; the watchdog renews the holds taken without one.
 */
export class RReadLock extends ReadWriteSide {
  /** @internal */
  override readonly metricKind = 'read_lock';

  /** @internal Use `RReadWriteLock.readLock()`. */
  constructor(core: Core, name: string, shared: Shared) {
    super(core, name, shared, 'read');
  }

  protected writeField(owner: string): string {
    return owner + WRITE_SUFFIX;
  }

  protected readField(): string {
    return '';
  }
}

/**
 * The exclusive side of an `RReadWriteLock` (Redisson's `RedissonWriteLock`), with `RLock`'s API. Granted
 * when nobody holds either side, or reentrantly to its holder. Its owner id ends in `:write` (the hash
 * field of its holds). An owner that holds only the read lock gets `LockUpgradeError`, decided by the
 * acquire script from the read holds in Redis (not from this process's records, which can outlive a hold
 * whose lease ended or that was force-unlocked; such a hold is no upgrade, as in Redisson).
 */
export class RWriteLock extends ReadWriteSide {
  /** @internal */
  override readonly metricKind = 'write_lock';

  /** @internal Use `RReadWriteLock.writeLock()`. */
  constructor(core: Core, name: string, shared: Shared) {
    super(core, name, shared, 'write');
  }

  /** @internal */
  override ownerOf(ctx: LockContext): string {
    return super.ownerOf(ctx) + WRITE_SUFFIX;
  }

  protected writeField(owner: string): string {
    return owner;
  }

  protected readField(owner: string): string {
    return owner.slice(0, -WRITE_SUFFIX.length);
  }
}
