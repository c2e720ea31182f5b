import type { Core } from '../core.js';
import { auxName } from '../keys.js';
import { requireLockUnit, RLock, tryLockTimes } from '../lock/lock.js';
import { acquireForCaller } from '../lock/protocol/caller.js';
import type { AcquireResult } from '../lock/scripts.js';
import type { ObjectKind } from '../object-kind.js';
import type { MetricKind } from '../observe/kinds.js';
import { leaseMillis, type TimeUnit } from '../time.js';
import { FENCED_ACQUIRE } from './scripts.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RFencedLock`. */
    'fenced-lock': true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RFencedLock`. */
    fenced_lock: true;
  }
}

/**
 * A reentrant lock that hands out a fencing token with every acquisition (Redisson's `RFencedLock`).
 *
 * A lease lock cannot stop a holder that was paused past its lease from writing after another client got
 * the lock. The token can: it comes from a counter incremented in the same script that grants the lock,
 * so tokens strictly increase in grant order, and a resource that remembers the highest token it has
 * accepted rejects writes that carry an older one (for example `UPDATE … SET …, fence_token = $token
 * WHERE id = $id AND fence_token < $token`). Every acquisition takes a new token, reentrant ones too.
 *
 * Tokens can repeat or go back when the counter is lost: Redis restarted without persistence, a failover
 * to a replica that had not received the last increments, or the counter evicted (use a
 * `maxmemory-policy` that never evicts keys without a TTL: `noeviction` or a `volatile-*` policy).
 *
 * Redis keys: the lock hash (as `RLock`, with `kind` = `fenced-lock`) and the counter `relock:fence:{name}`
 * (a string, no TTL, never deleted by relock); channel as `RLock`. Everything else is `RLock`'s.
 */
export class RFencedLock extends RLock {
  /** The Redis key of the fencing counter. */
  readonly fenceKey: string;
  protected override readonly kind: ObjectKind = 'fenced-lock';
  /** @internal */
  override readonly metricKind: MetricKind = 'fenced_lock';

  /** @internal Use `LockClient.getFencedLock(name)`. */
  constructor(core: Core, name: string) {
    super(core, name);
    this.fenceKey = auxName(core.keyPrefix, 'fence', this.key);
  }

  /**
   * Acquires the lock, waiting as long as it takes, and returns its fencing token (Redisson's
   * `lockAndGetToken`). Without `leaseTime` the watchdog keeps the lock; with it, the lock expires after
   * `leaseTime` (honoured, unlike Redisson's synchronous variant). Throws as `RLock.lock`.
   */
  async lockAndGetToken(leaseTime?: number, unit?: TimeUnit): Promise<bigint> {
    const lease = leaseTime === undefined ? undefined : leaseMillis(leaseTime, requireLockUnit(unit));
    const taken = await acquireForCaller(this, Infinity, lease, undefined);
    return taken!.grant.token!;
  }

  /**
   * Tries to acquire the lock and returns its fencing token, or `undefined` when it stayed busy
   * (Redisson's `tryLockAndGetToken`): `()` one attempt; `(waitTime, unit)` with the watchdog;
   * `(waitTime, leaseTime, unit)` with a lease. Throws as `RLock.tryLock`.
   */
  tryLockAndGetToken(): Promise<bigint | undefined>;
  tryLockAndGetToken(waitTime: number, unit: TimeUnit): Promise<bigint | undefined>;
  tryLockAndGetToken(waitTime: number, leaseTime: number, unit: TimeUnit): Promise<bigint | undefined>;
  async tryLockAndGetToken(waitTime?: number, leaseOrUnit?: number | TimeUnit, unit?: TimeUnit): Promise<bigint | undefined> {
    const [wait, lease] = tryLockTimes(waitTime, leaseOrUnit, unit);
    const taken = await acquireForCaller(this, wait, lease, undefined);
    return taken?.grant.token;
  }

  /**
   * The last token handed out for this lock (`GET` of the counter), 0 when none was (Redisson's
   * `getToken`): whoever got it, not necessarily the caller. Throws `RedisUnavailableError`,
   * `ClientClosedError`.
   */
  async getToken(): Promise<bigint> {
    this.core.checkOpen();
    const value = await this.core.executor.run('fencedLock.getToken', () => this.core.connection.send(this.fenceKey, ['GET', this.fenceKey]), { idempotent: true });
    return BigInt((value as string | null) ?? 0);
  }

  /** @internal */
  override runAcquire(owner: string, lease: string, guard: string, held: string): Promise<AcquireResult> {
    return FENCED_ACQUIRE.run(this.core.connection, { lock: this.key, fence: this.fenceKey, leaseMs: lease, owner, guard, heldCount: held, kind: this.kind });
  }
}
