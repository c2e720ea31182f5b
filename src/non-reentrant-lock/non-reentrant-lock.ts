import type { LockContext } from '../context.js';
import type { Core } from '../core.js';
import { RLock } from '../lock/lock.js';
import { HOLD_ENDED, type AcquireResult } from '../lock/scripts.js';
import type { ObjectKind } from '../object-kind.js';
import type { MetricKind } from '../observe/kinds.js';
import type { RenewalKind } from '../watchdog/hold.js';
import { FORCE_UNLOCK, RENEW, STATE, text, UNLOCK } from './scripts.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RNonReentrantLock`. */
    'non-reentrant-lock': true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RNonReentrantLock`. */
    non_reentrant_lock: true;
  }
}

/** The renewal kind of the non-reentrant lock: compare-and-`PEXPIRE`, batched by the watchdog with its other holds of one slot. */
const RENEWAL: RenewalKind = { script: RENEW, keysPerHold: 1 };

const GRANTED: AcquireResult = Object.freeze({ granted: true });

/**
 * A lock that is not reentrant (Redisson 4.4's `getNonReentrantLock`, `RedissonNonReentrantLock`): the
 * cheapest lock relock offers. Its owner that acquires it again waits like any other owner: inside a
 * context, a second `tryLock()` by the context that holds it answers false, and with a wait time it waits
 * until the context's own hold ends (released from elsewhere in the context, or expired: with the watchdog
 * renewing it, the wait runs out). Outside any context the ownership rule of every relock lock applies (see
 * `RLock`): a task whose newest acquisition of the object still holds it gets `ReentryNeedsContextError`
 * at once instead of waiting for itself, and its `unlock()` releases only that acquisition.
 *
 * Redis: a string at `keyPrefix + name` holding the owner id (`clientId:contextId`, or the `identifier`
 * given to `acquire`), with the lease as its TTL; channel `relock:channel:{name}` (an unlock publishes `0`
 * there; sharded pub/sub on a Cluster); transient unlock latches `relock:unlock:{name}:<id>` (only for an
 * unlock after a lost reply). The round trips:
 * - acquire: `SET key owner NX PX lease GET`, no script (`GET` answers the holder when refused, and makes
 *   Redis refuse a key of another type with WRONGTYPE); a refused attempt then reads the holder's `PTTL`
 *   (the waiter's timer), so an uncontended acquire is one command;
 * - release: a compare-and-delete script (value = owner ⇒ `DEL` and publish);
 * - renewal: compare-and-`PEXPIRE`, in the watchdog's batches (`lockWatchdogTimeout`, `watchdogBatchSize`);
 * - waiting: pub/sub on the channel, with a timer on the holder's TTL, as `RLock`.
 * Everything else is `RLock`'s: leases, the watchdog, handles (`await using`, `extend`, `signal`),
 * `identifier`/`acquiredExternally`, lost-reply guards (a retried acquire that finds its own owner in the
 * key adopts the grant it lost), the events and metrics (kind `non_reentrant_lock`).
 *
 * One kind per name: a hash of another relock lock at the name fails with `WrongTypeError`. A string is
 * not marked, so a string key holding other data (application data, a semaphore's count) is taken for
 * another owner's hold: acquisitions wait for it, unlocks throw `IllegalMonitorStateError`, and
 * `forceUnlock` deletes it. Give this lock names of its own. Native compare-and-delete commands of newer
 * servers are not used yet: see `scripts.ts` of this folder.
 */
export class RNonReentrantLock extends RLock {
  protected override readonly kind: ObjectKind = 'non-reentrant-lock';
  /** @internal */
  override readonly metricKind: MetricKind = 'non_reentrant_lock';
  /** @internal */
  override readonly renewal: RenewalKind = RENEWAL;

  /** @internal Use `LockClient.getNonReentrantLock(name)`. */
  constructor(core: Core, name: string) {
    super(core, name);
  }

  /** @internal
   * One acquire attempt: `SET NX PX GET`. `held` other than '0' (the owner holds the lock as this client
   * knows it: a second acquisition in a context) writes nothing: it reads the holder and answers busy like
   * for any other owner, or `'lost'` when the key is gone (the client then forgets the ended hold and asks
   * again). `guard` other than '' (an earlier attempt's reply was lost) adopts a hold of the owner found in
   * the key: that attempt's grant.
   */
  override async runAcquire(owner: string, lease: string, guard: string, held: string): Promise<AcquireResult> {
    const { connection } = this.core;
    if (held !== '0') {
      const [holder, ttl] = await STATE.run(connection, { lock: this.key });
      return holder === null ? HOLD_ENDED : busy(ttl);
    }
    const holder = await connection.send(this.key, ['SET', this.key, owner, 'NX', 'PX', lease, 'GET']);
    if (holder === null || (guard !== '' && text(holder) === owner)) return GRANTED;
    return busy(Number(await connection.send(this.key, ['PTTL', this.key])));
  }

  /** @internal Compare-and-delete (see `UNLOCK` in scripts.ts): 1 when released, nil when the owner does not hold it. */
  override runUnlock(owner: string, latch: string, attempt: number, guard: string): Promise<number | null> {
    const { connection, latches } = this.core;
    return UNLOCK.run(connection, { lock: this.key, latch, owner, channel: this.channel, publishCommand: connection.publishCommand, latchTtl: latches.ttlArg, retry: attempt > 1 ? '1' : '0', guard });
  }

  /** Deletes the string whoever holds it and publishes `0` (see `FORCE_UNLOCK` in scripts.ts). */
  protected override runForceUnlock(): Promise<boolean> {
    return FORCE_UNLOCK.run(this.core.connection, { lock: this.key, channel: this.channel, publishCommand: this.core.connection.publishCommand });
  }

  /** @internal 1 when `ctx`'s owner holds the lock (the string holds its id), else 0. */
  override async holdCount(ctx: LockContext): Promise<number> {
    const [holder] = await this.state();
    return holder === this.ownerOf(ctx) ? 1 : 0;
  }

  /** Whether anyone holds the lock (the key exists). Throws `WrongTypeError` (another Redis type), `RedisUnavailableError`, `ClientClosedError`. */
  override async isLocked(): Promise<boolean> {
    const [holder] = await this.state();
    return holder !== null;
  }

  /**
   * Milliseconds until the lock expires (`PTTL`): -2 when it is not held, -1 when the key has no expiry
   * (not set by relock). Throws `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  override async remainTimeToLive(): Promise<number> {
    const [, ttl] = await this.state();
    return ttl;
  }

  /** The holder and `PTTL` of the key, in one read (`STATE`). */
  private state(): Promise<[holder: string | null, pttl: number]> {
    this.core.checkOpen();
    const expects = this.expects;
    return this.core.executor.run('non-reentrant-lock.state', () => STATE.run(this.core.connection, { lock: this.key }), { idempotent: true, expects });
  }
}

/** A refused attempt with the holder's `PTTL` (-2, the key gone since: retry at once). */
const busy = (ttl: number): AcquireResult => ({ granted: false, ttl: ttl === -2 ? 0 : ttl });
