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
