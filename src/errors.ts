import type { ObjectKind } from './object-kind.js';

/** The brand of relock's error classes, the same in every build (`Symbol.for`). */
const RELOCK_ERROR = Symbol.for('relock.error-class');

/**
 * The base class of relock's typed errors. Every error relock throws is a `RelockError` with a stable
 * `code` (an abort through an `AbortSignal` you passed rejects with that signal's reason instead); errors
 * caused by another (a Redis reply, a socket error) carry it as `cause`. `name` is the subclass's name.
 */
export class RelockError extends Error {
  /**
   * `error instanceof SomeRelockError` holds for that class's errors from either build of relock (ES
   * module and CommonJS, which a process may load both of; see src/shared-state.ts): an object whose
   * prototype chain has a relock error class of the same name, besides the usual check.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (typeof value !== 'object' || value === null) return false;
    for (let proto: unknown = Object.getPrototypeOf(value); proto !== null; proto = Object.getPrototypeOf(proto)) {
      const made = (proto as { constructor?: { name?: unknown; [RELOCK_ERROR]?: unknown } }).constructor;
      if (made?.[RELOCK_ERROR] === true && made.name === this.name) return true;
    }
    return false;
  }

  /** Marks relock's error classes (inherited by every subclass), for `Symbol.hasInstance`. */
  static readonly [RELOCK_ERROR] = true;

  /**
   * A stable identifier, for logs and `switch` statements: `'ILLEGAL_MONITOR_STATE'`, `'LOCK_LOST'`,
   * `'LOCK_ACQUIRE_TIMEOUT'`, `'INVALID_ARGUMENT'`, `'WRONG_TYPE'`, `'CLIENT_CLOSED'`, `'REDIS_UNAVAILABLE'`,
   * `'REDIS_COMMAND'`, `'NO_PERMISSION'`, `'CROSS_SLOT'`, `'NO_SYNCED_REPLICAS'`, `'PERMIT_ACQUIRE_TIMEOUT'`, `'PERMIT_NOT_HELD'`,
   * `'LOCK_UPGRADE'`, `'OWNER_UNKNOWN'`, `'REENTRY_NEEDS_CONTEXT'`, `'LEADERSHIP_ENDED'`, `'STALE_TOKEN'`, `'FENCE_TABLE_MISSING'`.
   */
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * The caller does not hold the lock it tried to release (Java's `IllegalMonitorStateException`, thrown by
 * Redisson's `RLock.unlock`): it never held it, it already released it, or its lease expired (a new holder's
 * lock is then left alone). Thrown by `unlock()`, `LockHandle.release()` and `RMultiLock.unlock()`;
 * `RRedLock.unlock()` throws it only when no node held the lock.
 */
export class IllegalMonitorStateError extends RelockError {
  constructor(
    /** The name of the lock (for a multi-lock or RRedLock, its members' names as `[a, b]`). */
    readonly lockName: string,
    /** The owner id that tried to release it: `clientId:contextId`. */
    readonly owner: string,
    detail = 'it is not held by this owner',
  ) {
    super('ILLEGAL_MONITOR_STATE', `cannot unlock "${lockName}" as owner ${owner}: ${detail} (never acquired, already released, or its lease expired)`);
  }
}

/**
 * A held lock (or expirable permit) was lost: its key expired or was deleted, renewals failed until the
 * lease ran out, or its client shut down while it was held. It is not thrown by a method: it is the `reason` of a handle's `signal` (`LockHandle`,
 * `PermitHandle`, the `AbortSignal` given to `withLock`'s function) and the `error` of the client's
 * `lockLost` event.
 */
export class LockLostError extends RelockError {
  constructor(
    /** The name of the lock (or expirable semaphore) that was lost, as given to its factory. */
    readonly lockName: string,
    /**
     * Why: `'expired'`, a renewal (or the hold's own unlock) found the hold gone from Redis (it expired while this process was
     * paused, was deleted or force-unlocked, or Redis lost it in a restart or failover); `'renewal-failed'`,
     * renewals kept failing (see `cause`) until the lease ran out; `'renewal-late'`, the watchdog's lease
     * ran out before a renewal could even be sent (this process was paused or its event loop blocked past
     * the lease); `'lease-ended'`, an explicit lease ran out (the handle's own timer: no `lockLost` event
     * for these, the lease was the caller's choice); `'shutdown'`, the `LockClient` was shut down while the
     * hold was live (nothing renews it or can release it any more: its key stays until its lease ends).
     */
    readonly reason: 'expired' | 'renewal-failed' | 'renewal-late' | 'lease-ended' | 'shutdown',
    options?: { cause?: unknown },
  ) {
    super('LOCK_LOST', `lock "${lockName}" was lost (${reason})`, options);
  }
}

/**
 * `acquire()` (of a lock, multi-lock or RRedLock) or `withLock()` gave up: the lock stayed busy for the whole
 * wait time. `tryLock()` resolves to `false` instead.
 */
export class LockAcquireTimeoutError extends RelockError {
  constructor(
    /** The name of the lock (for a multi-lock or RRedLock, its members' names as `[a, b]`). */
    readonly lockName: string,
    /** The wait time that ran out, in milliseconds. */
    readonly waitTimeMs: number,
  ) {
    super('LOCK_ACQUIRE_TIMEOUT', `could not acquire "${lockName}" within ${waitTimeMs} ms: it stayed held by another owner`);
  }
}

/**
 * An argument or option is invalid; `argument` names it. Thrown before anything is sent to Redis (by the
 * factories for a bad name, by `createLockClient` for a bad option, by methods for a bad time, unit or count).
 */
export class InvalidArgumentError extends RelockError {
  constructor(
    /** The argument or option at fault, e.g. `'leaseTime'`, `'unit'`, `'retry.retries'`, `'options.maxDelay'`. */
    readonly argument: string,
    detail: string,
  ) {
    super('INVALID_ARGUMENT', `invalid ${argument}: ${detail}`);
  }
}

/**
 * The key of an object is used by something else, and nothing was written to it. Either by another kind
 * of relock object (`foundKind`): a name serves one kind at a time, e.g. a read-write lock cannot take a
 * name an `RLock` holds (every acquire script checks the kind, see `ObjectKind`); or by data relock did
 * not write: another Redis type (Redis `WRONGTYPE`, e.g. a string at a lock's key), or a hash without a
 * relock kind. Not retried.
 */
export class WrongTypeError extends RelockError {
  /** The kind of relock object that holds the key, when it is one (`undefined`: other data). */
  readonly foundKind: ObjectKind | undefined;
  /** The kind of the object whose call failed (`undefined` only for errors made without it). */
  readonly askedKind: ObjectKind | undefined;

  constructor(
    /** The Redis key (with `keyPrefix`). */
    readonly key: string,
    /** The type Redis reports for it (`TYPE`), e.g. `'string'`. */
    readonly actualType: string,
    /** The type relock keeps there: `'hash'` for locks and latches, `'string'` for semaphores, `'zset'` for expirable semaphores. */
    readonly expectedType: string,
    options?: { cause?: unknown; foundKind?: ObjectKind | undefined; askedKind?: ObjectKind | undefined },
  ) {
    const found = options?.foundKind;
    const asked = options?.askedKind;
    super(
      'WRONG_TYPE',
      found !== undefined
        ? `key "${key}" belongs to ${article(found)}, so ${asked === undefined ? 'a relock object of another kind' : article(asked)} cannot use it: a name serves one kind of relock object at a time; nothing was written`
        : `key "${key}" holds ${foundData(actualType, expectedType)}, where ${asked === undefined ? 'relock' : article(asked)} keeps ${expectedData(asked, expectedType)}: the name is used by data relock did not write; nothing was written`,
      options,
    );
    this.foundKind = found;
    this.askedKind = asked;
  }
}

/** `kind` with its indefinite article: "a lock", "an expirable-semaphore". */
function article(kind: string): string {
  return `${/^[aeiou]/i.test(kind) ? 'an' : 'a'} ${kind}`;
}

/** What a `WrongTypeError` found at a key that holds no relock object, for its message. */
function foundData(actualType: string, expectedType: string): string {
  if (actualType === 'hash' && expectedType === 'hash') return "a Redis hash without relock's kind field";
  if (actualType === 'string' && expectedType === 'string') return 'a Redis string that is not an integer';
  return actualType === 'none' || actualType === 'unknown' ? `data of an unknown type (${actualType})` : `a Redis ${actualType}`;
}

/** What an object of kind `asked` keeps at its key, for the message of a `WrongTypeError`. */
function expectedData(asked: ObjectKind | undefined, expectedType: string): string {
  if (asked === 'read-write-lock') return "a Redis hash with a 'mode' field";
  if (asked === 'semaphore') return 'its free permit count, an integer in a Redis string';
  if (asked === 'expirable-semaphore') return 'its permits in a Redis sorted set';
  return asked !== undefined && expectedType === 'hash' ? `a Redis hash with the field kind=${asked}` : `a Redis ${expectedType}`;
}
/** A Redis client family as `ClientClosedError` names it. */
export type ClosedClient = 'node-redis' | 'ioredis/iovalkey' | 'Valkey GLIDE';

/**
 * The `LockClient` was shut down, or the Redis client it was given was closed by its owner. Thrown by every
 * call made after `shutdown()` or after that close, and by waits in progress then: they reject at once
 * (relock wakes them), and nothing is acquired on that client afterwards. The message names the client and
 * the call that fixes it (`client`). Not retried.
 */
export class ClientClosedError extends RelockError {
  /**
   * The family of the user's Redis client when that client was closed by its owner (or, node-redis, not
   * connected yet): `'node-redis'`, `'ioredis/iovalkey'` or `'Valkey GLIDE'`; undefined when the lock client
   * itself was shut down (`shutdown()`).
   */
  readonly client: ClosedClient | undefined;
  constructor(options?: { cause?: unknown; client?: ClosedClient }) {
    super('CLIENT_CLOSED', options?.client ? CLOSED_CLIENT[options.client] : 'the lock client is shut down (shutdown() was called): create a new one with createLockClient', options);
    this.client = options?.client;
  }
}

/** What `ClientClosedError` says when the user's client of each family is closed: the client, and the call that fixes it. */
const CLOSED_CLIENT: Record<ClosedClient, string> = {
  'node-redis':
    'the node-redis client given to createLockClient is closed (close(), quit() or destroy() was called) or not connected yet: call connect() on it before createLockClient, and close it only after shutdown()',
  'ioredis/iovalkey':
    'the ioredis/iovalkey client given to createLockClient is closed (quit() or disconnect() was called, or it stopped reconnecting): close it only after shutdown(), and give a new lock client an open one',
  'Valkey GLIDE':
    'the Valkey GLIDE client given to createLockClient is closed (close() was called): close it only after shutdown(), and give a new lock client one made with GlideClient.createClient()',
};

/**
 * Redis did not answer, or answered only with transient errors (`LOADING`, `READONLY`, `TRYAGAIN`, a closed
 * socket, no reply within `responseTimeout`, …), after the retries of the `retry` policy or until the
 * caller's wait time ran out. `cause` is the last error. An operation that failed with it may or may not
 * have taken effect in Redis; relock undoes acquisitions that turn out to have gone through.
 */
export class RedisUnavailableError extends RelockError {
  constructor(operation: string, options?: { cause?: unknown }) {
    const detail = options?.cause instanceof Error ? `: ${options.cause.message || options.cause.name}` : '';
    super('REDIS_UNAVAILABLE', `Redis was unavailable for ${operation}${detail}`, options);
  }
}

/**
 * Redis answered an unexpected error (not transient, not a wrong type): for example `NOPERM` from an ACL
 * that forbids `EVALSHA`, or a script error. `cause` is the reply. Not retried.
 */
export class RedisCommandError extends RelockError {
  constructor(operation: string, options: { cause: unknown }, code = 'REDIS_COMMAND', detail?: string) {
    super(code, `Redis rejected ${operation}: ${detail ?? (options.cause as Error)?.message ?? String(options.cause)}`, options);
  }
}

/**
 * Redis refused a command because of the ACL of the user relock connects as (a `NOPERM` reply, or a
 * script's refusal: "The user executing the script can't …" on Redis 7.0, "ACL failure in script: …" on
 * Redis 7.2+ and Valkey; see src/redis/replies.ts). `command` names the refused Redis command and
 * `permission` the class of ACL rule that is missing: `'command'` (add `+<command>`), `'key'` (a key
 * pattern `~<keyPrefix>*` covering relock's keys), `'channel'` (a channel pattern `&<keyPrefix>*`).
 * docs/security.md gives the whole rule per `scripting` mode. Not retried. A script refused in the middle
 * (a channel it publishes on) may have written before the refusal: Redis does not roll scripts back.
 */
export class PermissionError extends RedisCommandError {
  constructor(
    operation: string,
    /** The Redis command refused, lowercase (`'evalsha'`, `'function|load'`, `'subscribe'`, …); for a refusal inside a script, the script's command (`'evalsha'`, `'fcall'`). */
    readonly command: string,
    /** The class of ACL permission missing. */
    readonly permission: 'command' | 'key' | 'channel',
    options: { cause: unknown },
  ) {
    const need = { command: `the command permission +${command}`, key: 'a key pattern (~<keyPrefix>*) covering the keys', channel: 'a channel pattern (&<keyPrefix>*) covering the channels' }[permission];
    super(operation, options, 'NO_PERMISSION', `the ACL of the Redis user lacks ${need} of '${command}' (see docs/security.md): ${(options.cause as Error)?.message ?? String(options.cause)}`);
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
 * Lock events (`RLock.addListener`) need Redis keyspace notifications, which this deployment does not
 * give: `reason` `'disabled'` when `notify-keyspace-events` lacks the flags the event needs (`K` and `x`
 * for `expired`, `K` and `g` for `deleted`; enable them with `CONFIG SET notify-keyspace-events Kgx`),
 * `'config-refused'` when `CONFIG GET` is not allowed (managed Redis, ACL: enable them in the provider's
 * settings), `'cluster'` on Redis Cluster (keyspace notifications are not sent across nodes). Without
 * them, a holder learns of a lost lock from its handle's `signal` and the `lockLost` event.
 */
export class KeyspaceEventsUnavailableError extends RelockError {
  constructor(
    /** Why the events cannot be observed. */
    readonly reason: 'disabled' | 'config-refused' | 'cluster',
    detail: string,
    options?: { cause?: unknown },
  ) {
    super('KEYSPACE_EVENTS_UNAVAILABLE', `lock events need Redis keyspace notifications: ${detail}`, options);
  }
}

/**
 * `syncReplicas` is on and no replica acknowledged a write within the timeout (Redisson's
 * `NoSyncedSlavesException`): the acquisition was undone, so a failover right now could not hand the same
 * lock to someone else. Retried per the retry policy before it reaches the caller.
 */
export class NoSyncedReplicasError extends RelockError {
  constructor(
    /** The key whose write no replica acknowledged (with `keyPrefix`). */
    readonly key: string,
    /** The number of replicas the primary reported (`connected_slaves`). */
    readonly replicas: number,
    /** The `WAIT` timeout in milliseconds (`syncReplicas.timeout`). */
    readonly timeoutMs: number,
  ) {
    super('NO_SYNCED_REPLICAS', `none of ${replicas} replica(s) acknowledged the write to "${key}" within ${timeoutMs} ms; the acquisition was undone (raise syncReplicas.timeout, or check replication)`);
  }
}

/**
 * A semaphore's `acquire()` gave up: fewer permits than asked for were free for the whole wait time
 * (Redisson's `tryAcquire` returning false, as an error for the handle-returning form).
 */
export class PermitAcquireTimeoutError extends RelockError {
  constructor(
    /** The semaphore's name, as given to its factory. */
    readonly semaphoreName: string,
    /** The number of permits asked for. */
    readonly permits: number,
    /** The wait time that ran out, in milliseconds. */
    readonly waitTimeMs: number,
  ) {
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
  constructor(
    /** The semaphore's name, as given to `getPermitExpirableSemaphore()`. */
    readonly semaphoreName: string,
    /** The permit ids that were not held (at most 100 of them). */
    readonly ids: readonly string[],
    /** How many of the given ids were not held (may exceed `ids.length`). */
    readonly missing: number,
  ) {
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
  constructor(
    /** The name of the read-write lock. */
    readonly lockName: string,
    /** The owner id that holds the read lock and asked for the write lock: `clientId:contextId`. */
    readonly owner: string,
  ) {
    super('LOCK_UPGRADE', `cannot take the write lock of "${lockName}" as owner ${owner}: it holds the read lock, and a read → write upgrade would wait for itself forever; release the read lock first`);
  }
}

/**
 * `unlock()` outside any lock context, from a task that can show no acquisition of the object: relock knows
 * a contextless acquisition's task only through the caller's async context, and this caller's holds none
 * (the lock was taken in another callback, another request, another tick of a timer). Nothing is released:
 * relock never guesses which hold a caller means. Release the handle from `acquire()` instead, or hold the
 * lock inside `withLock()` / `runInContext()`. An `IllegalMonitorStateError` (code `'OWNER_UNKNOWN'`).
 */
export class OwnerUnknownError extends IllegalMonitorStateError {
  override readonly code: string = 'OWNER_UNKNOWN';
  constructor(lockName: string, owner: string) {
    super(lockName, owner);
    this.message =
      `cannot unlock "${lockName}": unlock() outside a lock context releases only an acquisition made by the calling task, ` +
      `and this task made none of "${lockName}" (taken in another callback?): release the handle from acquire(), or use withLock()/runInContext()`;
  }
}

/**
 * A contextless acquisition (`lock()`, `tryLock()`, `acquire()` outside any lock context) by a task whose
 * own earlier `lock()`/`tryLock()` of the same object still holds it. Outside a context every
 * acquisition is an owner of its own, so this one would wait for the caller's own hold (a deadlock), and a
 * task that acquires in a loop and releases in the jobs it starts cannot be told from one that reenters.
 * Refused at once, nothing sent to Redis: relock reenters only inside a context (`withLock()`,
 * `runInContext()`); or pass the handle from `acquire()` to the code that releases it. Code `'REENTRY_NEEDS_CONTEXT'`.
 */
export class ReentryNeedsContextError extends RelockError {
  constructor(
    /** The name of the lock (for a multi-lock or RRedLock, its members' names as `[a, b]`). */
    readonly lockName: string,
  ) {
    super(
      'REENTRY_NEEDS_CONTEXT',
      `cannot acquire "${lockName}" again: this task already holds it outside a lock context, and relock reenters only inside a context: ` +
        'use withLock()/runInContext(), or use the handle from acquire() (pass it to the code that releases it)',
    );
  }
}

// Fencing (issue 33): the errors of the storage-side checks, `relock/fencing` and `getFencedResource`.

/**
 * A write carried a fencing token lower than the highest the resource has already accepted: a newer
 * holder of the lock has written since, so this holder's lease ran out (it was paused, partitioned or
 * slow). Nothing was written: the transaction was rolled back, the statement or Redis script refused.
 * Not retried: the caller no longer holds the lock and must not write again with this token.
 */
export class StaleTokenError extends RelockError {
  constructor(
    /** The fenced resource's name (the `relock_fences.resource` row, or the `getFencedResource` name). */
    readonly resource: string,
    /** The token the refused write carried. */
    readonly token: bigint,
    /** The highest token the resource had accepted when it refused the write. */
    readonly highest: bigint,
  ) {
    super('STALE_TOKEN', `write to "${resource}" with fencing token ${token} refused: the resource has already accepted token ${highest} (a newer lock holder wrote; this one's lease ran out); nothing was written`);
  }
}

/**
 * The fence table of `relock/fencing` (`relock_fences` unless the `table` option names another) does not
 * exist: run `migrate(pool)` or the SQL of docs/fencing.md first. Nothing was written.
 */
export class FenceTableMissingError extends RelockError {
  constructor(
    /** The table the helper looked for, as given (`relock_fences`, `myschema.relock_fences`). */
    readonly table: string,
    options?: { cause?: unknown },
  ) {
    super('FENCE_TABLE_MISSING', `fence table ${table} does not exist: create it with migrate(pool) from relock/fencing or the SQL of docs/fencing.md; nothing was written`, options);
  }
}

/**
 * A leadership ended (`Leadership.signal`'s reason): `'resigned'`, by `resign()` (or `await using`, or the
 * end of `run()`'s function or caller's signal); `'lost'`, the election's lock was lost (its `cause` is the
 * `LockLostError`: expired, renewals failed or late, or the client shut down). Not thrown by a method.
 */
export class LeadershipEndedError extends RelockError {
  constructor(
    /** The election's name, as given to `getLeaderElection()`. */
    readonly election: string,
    /** Why it ended: `'resigned'` or `'lost'`. */
    readonly reason: 'resigned' | 'lost',
    options?: { cause?: unknown },
  ) {
    super('LEADERSHIP_ENDED', `leadership of "${election}" ended (${reason})`, options);
  }
}
