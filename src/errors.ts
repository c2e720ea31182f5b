/**
 * Typed errors. Every error relock throws is a `RelockError` with a stable `code`; errors caused by
 * another (a Redis reply, a socket error) carry it as `cause`.
 */
export class RelockError extends Error {
  /** A stable identifier such as `'ILLEGAL_MONITOR_STATE'`, for logs and `switch` statements. */
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * The caller does not hold the lock it tried to release (Java's `IllegalMonitorStateException`, thrown by
 * Redisson's `RLock.unlock`): it never held it, it already released it, or its lease expired.
 */
export class IllegalMonitorStateError extends RelockError {
  constructor(readonly lockName: string, readonly owner: string, detail = 'it is not held by this owner') {
    super('ILLEGAL_MONITOR_STATE', `cannot unlock "${lockName}" as owner ${owner}: ${detail} (never acquired, already released, or its lease expired)`);
  }
}

/** A held lock was lost: its key expired or was deleted, or renewals failed until the lease ran out. */
export class LockLostError extends RelockError {
  constructor(readonly lockName: string, readonly reason: 'expired' | 'deleted' | 'renewal-failed' | 'lease-ended', options?: { cause?: unknown }) {
    super('LOCK_LOST', `lock "${lockName}" was lost (${reason})`, options);
  }
}

/** `acquire()` gave up: the lock stayed busy for the whole wait time. */
export class LockAcquireTimeoutError extends RelockError {
  constructor(readonly lockName: string, readonly waitTimeMs: number) {
    super('LOCK_ACQUIRE_TIMEOUT', `could not acquire "${lockName}" within ${waitTimeMs} ms: it stayed held by another owner`);
  }
}

/** An argument or option is invalid; `argument` names it. */
export class InvalidArgumentError extends RelockError {
  constructor(readonly argument: string, detail: string) {
    super('INVALID_ARGUMENT', `invalid ${argument}: ${detail}`);
  }
}

/** The key of an object holds a value of another Redis type (Redis `WRONGTYPE`), e.g. a string at a lock's key. */
export class WrongTypeError extends RelockError {
  constructor(readonly key: string, readonly actualType: string, readonly expectedType: string, options?: { cause?: unknown }) {
    super('WRONG_TYPE', `key "${key}" holds a Redis ${actualType}, not the ${expectedType} relock expects: the name is used by other data`, options);
  }
}

/** The `LockClient` was shut down, or the node-redis client it uses was closed. */
export class ClientClosedError extends RelockError {
  constructor(options?: { cause?: unknown }) {
    super('CLIENT_CLOSED', 'the lock client is shut down or its Redis connection was closed', options);
  }
}

/** Redis did not answer, or answered only with transient errors, within the retry policy. `cause` is the last error. */
export class RedisUnavailableError extends RelockError {
  constructor(operation: string, options?: { cause?: unknown }) {
    const detail = options?.cause instanceof Error ? `: ${options.cause.message || options.cause.name}` : '';
    super('REDIS_UNAVAILABLE', `Redis was unavailable for ${operation}${detail}`, options);
  }
}

/** Redis answered an unexpected error (not transient, not a wrong type). `cause` is the reply. */
export class RedisCommandError extends RelockError {
  constructor(operation: string, options: { cause: unknown }) {
    super('REDIS_COMMAND', `Redis rejected ${operation}: ${(options.cause as Error)?.message ?? String(options.cause)}`, options);
  }
}

/**
 * The keys of one operation would live in different Redis Cluster slots. Every key and channel of a relock
 * object carries the object's hash tag (the part of the name between the first `{` and the next `}`, or
 * the whole name), so this happens only with names whose braces do not form a hash tag, or when Redis
 * answered CROSSSLOT. Name objects with a tag such as `orders:{42}` to choose their slot yourself.
 */
export class CrossSlotError extends RelockError {
  constructor(detail: string, options?: { cause?: unknown }) {
    super(
      'CROSS_SLOT',
      `${detail}. On Redis Cluster all keys of one operation must hash to one slot: put the part that must match between braces (a hash tag), e.g. "lock:{user42}:orders" and "lock:{user42}:payments" share the slot of "user42"`,
      options,
    );
  }
}

/**
 * `syncReplicas` is on and no replica acknowledged a write within the timeout (Redisson's
 * `NoSyncedSlavesException`): the acquisition was undone, so a failover right now could not hand the same
 * lock to someone else. Retried per the retry policy before it reaches the caller.
 */
export class NoSyncedReplicasError extends RelockError {
  constructor(readonly key: string, readonly replicas: number, readonly timeoutMs: number) {
    super('NO_SYNCED_REPLICAS', `none of ${replicas} replica(s) acknowledged the write to "${key}" within ${timeoutMs} ms; the acquisition was undone (raise syncReplicas.timeout, or check replication)`);
  }
}

/**
 * A semaphore's `acquire()` gave up: fewer permits than asked for were free for the whole wait time
 * (Redisson's `tryAcquire` returning false, as an error for the handle-returning form).
 */
export class PermitAcquireTimeoutError extends RelockError {
  constructor(readonly semaphoreName: string, readonly permits: number, readonly waitTimeMs: number) {
    super('PERMIT_ACQUIRE_TIMEOUT', `could not acquire ${permits} permit(s) of "${semaphoreName}" within ${waitTimeMs} ms: too few were free`);
  }
}

/**
 * A permit id given to `release()` (or `updateLeaseTime()` through a handle) is not held: it was never
 * issued, was already released, or its lease expired and the permit was reclaimed (Redisson's
 * `RPermitExpirableSemaphore.release` throwing `IllegalArgumentException`). When a list was given, none of
 * its permits was changed. `ids` lists the ids that were not held (at most 100 of them).
 */
export class PermitNotHeldError extends RelockError {
  constructor(readonly semaphoreName: string, readonly ids: readonly string[], readonly missing: number) {
    const shown = ids.slice(0, 3).join(', ') + (missing > 3 ? `, … (${missing} in all)` : '');
    super('PERMIT_NOT_HELD', `permit(s) ${shown} of "${semaphoreName}" are not held (never issued, already released, or expired); nothing was changed`);
  }
}

/**
 * The write lock of a read-write lock was requested by an owner that holds its read lock but not its write
 * lock. Such an upgrade would wait for the owner's own read hold forever (Redisson deadlocks there), so it
 * is refused before anything is sent: release the read lock first, or take the write lock first and the
 * read lock inside it (a downgrade, which is allowed).
 */
export class LockUpgradeError extends RelockError {
  constructor(readonly lockName: string, readonly owner: string) {
    super('LOCK_UPGRADE', `cannot take the write lock of "${lockName}" as owner ${owner}: it holds the read lock, and a read → write upgrade would wait for itself forever; release the read lock first`);
  }
}
