import { outsideContexts } from '../context.js';
import type { Core } from '../core.js';
import { auxName } from '../keys.js';
import { RLock } from '../lock/lock.js';
import type { AcquireResult } from '../lock/scripts.js';
import { DEADLINE_GRACE_MS } from '../redis/executor.js';
import { monotonic } from '../time.js';
import { FAIR_ACQUIRE, FAIR_FORCE_UNLOCK, FAIR_LEAVE, FAIR_UNLOCK } from './scripts.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RFairLock`. */
    'fair-lock': true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RFairLock`. */
    fair_lock: true;
  }
}

/**
 * How long a waiter that gave up waits for its leave of the queue while the connection is down (ms, plus
 * the executor's grace): a call with a wait time settles within it even when Redis is unreachable; the
 * leave then goes on in the background, and the waiter's deadline removes it anyway.
 */
const LEAVE_WAIT_MS = 20;

/**
 * A reentrant lock granted first come, first served across processes (Redisson's `RFairLock`). It has
 * `RLock`'s whole API and semantics (lease or watchdog, reentrancy per owner, handles, typed errors);
 * what differs is who gets the lock when it is released: the owner that has waited longest, never a
 * newcomer, even one in the releasing process.
 *
 * Redis keys (all with the name's hash tag, so one slot): the lock hash at `keyPrefix + name` (as
 * `RLock`'s, with `kind` = `fair-lock`), the queue `relock:queue:{name}` (LIST of waiting owner ids, head first) and the waiters'
 * deadlines `relock:timeout:{name}` (ZSET owner id → Redis server time in ms), unlock latches as `RLock`.
 * Channels: one per waiting owner, `relock:channel:{name}:<owner id>`; an unlock wakes only the head of
 * the queue, and a waiter that becomes the head (the one before it acquired or left) is told so.
 *
 * Waiters that die: a waiter refreshes its deadline (`now + fairLockWaitTimeout`, server time) with
 * every attempt and retries at least every third of `fairLockWaitTimeout`, so a live waiter, however
 * long it waits, keeps its place; a waiter that stops refreshing (its process died) is removed by the
 * next script that runs after its deadline, and the waiters behind it are woken at that deadline, so a
 * dead waiter holds the queue up for at most `fairLockWaitTimeout`. A waiter that gives up (wait time
 * over, aborted, Redis errors) leaves the queue at once. A holder that dies frees the lock at its lease
 * end, when the head of the queue, which watches that lease, takes it.
 *
 * `tryLock()` and wait time 0 make one attempt without joining the queue: they get the lock only when
 * it is free and nobody is waiting. Create objects with `LockClient.getFairLock(name)`.
 */
export class RFairLock extends RLock {
  /** The Redis key of the waiters' queue (LIST). */
  readonly queueKey: string;
  /** The Redis key of the waiters' deadlines (ZSET, server time in ms). */
  readonly timeoutKey: string;
  /** Owners waiting through this object (their attempts join the queue), with the number of their waits. */
  private readonly waiting = new Map<string, number>();
  /** The acquire scripts of each owner sent and not yet answered (settled when answered or failed). */
  private readonly flying = new Map<string, Set<Promise<unknown>>>();
  protected override readonly kind = 'fair-lock';
  /** @internal */
  override readonly metricKind = 'fair_lock';

  /** @internal Use `LockClient.getFairLock(name)`. */
  constructor(core: Core, name: string) {
    super(core, name);
    this.queueKey = auxName(core.keyPrefix, 'queue', this.key);
    this.timeoutKey = auxName(core.keyPrefix, 'timeout', this.key);
  }

  /** The channel on which the waiting owner `owner` is woken (`relock:channel:{name}:<owner>`). */
  waiterChannel(owner: string): string {
    return `${this.channel}:${owner}`;
  }

  /** @internal */
  override runAcquire(owner: string, lease: string, guard: string, held: string): Promise<AcquireResult> {
    const { connection, fairLockWaitTimeout } = this.core;
    const sent = FAIR_ACQUIRE.run(connection, {
      lock: this.key,
      queue: this.queueKey,
      timeouts: this.timeoutKey,
      leaseMs: lease,
      owner,
      guard,
      heldCount: held,
      waitTimeoutMs: String(fairLockWaitTimeout),
      join: this.waiting.has(owner) ? '1' : '0',
      channel: this.channel,
      publishCommand: connection.publishCommand,
      maxRetryMs: String(Math.max(1, Math.floor(fairLockWaitTimeout / 3))),
    });
    // Kept until Redis answers it: an abort gives the attempt up before that, and the leave must not run
    // before it (see `leave`).
    let flying = this.flying.get(owner);
    if (!flying) this.flying.set(owner, (flying = new Set()));
    const attempt: Promise<unknown> = sent.then(
      () => this.landed(owner, attempt),
      () => this.landed(owner, attempt),
    );
    flying.add(attempt);
    return sent;
  }

  /** Forgets `attempt` of `owner`, answered (or failed). */
  private landed(owner: string, attempt: Promise<unknown>): void {
    const flying = this.flying.get(owner);
    flying?.delete(attempt);
    if (flying?.size === 0) this.flying.delete(owner);
  }

  /** @internal A waiter listens on its own channel: an unlock wakes only the head of the queue. */
  override waitChannel(owner: string): string {
    return this.waiterChannel(owner);
  }

  /** @internal
   * A call that may wait is counted among the owner's waiting calls (the acquire script's `join`) until it
   * ends. One that ends without the lock leaves the queue: awaited when the wait time ran out (so a `false`
   * from `tryLock` means the owner is no longer queued, unless the connection was down, see
   * `LEAVE_WAIT_MS`), in the background otherwise (the command is sent before any later one of this
   * client, and the waiter's deadline removes it anyway if Redis cannot be reached).
   */
  override beginWait(owner: string, waitMs: number): void {
    if (waitMs > 0) this.waiting.set(owner, (this.waiting.get(owner) ?? 0) + 1);
  }

  /** @internal */
  override endWait(owner: string, waitMs: number, granted: boolean): Promise<void> | undefined {
    if (waitMs <= 0) return undefined;
    const left = this.waiting.get(owner)! - 1;
    if (left > 0) this.waiting.set(owner, left);
    else this.waiting.delete(owner);
    return !granted && left === 0 ? this.leave(owner) : undefined;
  }

  /** @internal */
  override runUnlock(owner: string, latch: string, attempt: number, guard: string): Promise<number | null> {
    const { connection, latches } = this.core;
    return FAIR_UNLOCK.run(connection, {
      ...this.queueKeys(),
      latch,
      owner,
      channel: this.channel,
      publishCommand: connection.publishCommand,
      latchTtl: latches.ttlArg,
      retry: attempt > 1 ? '1' : '0',
      guard,
    });
  }

  protected override runForceUnlock(): Promise<boolean> {
    return FAIR_FORCE_UNLOCK.run(this.core.connection, { ...this.queueKeys(), channel: this.channel, publishCommand: this.core.connection.publishCommand });
  }

  /** The keys every fair-lock script takes: the lock hash, the queue and the waiters' deadlines. */
  private queueKeys(): { lock: string; queue: string; timeouts: string } {
    return { lock: this.key, queue: this.queueKey, timeouts: this.timeoutKey };
  }

  /**
   * Removes `owner` from the queue (Redisson's `acquireFailed`) once each of its attempts still in flight
   * was answered: an aborted call gives its attempt up before Redis answers it, and that attempt (which
   * adds the owner to the queue) could otherwise run after the leave and queue the owner again for
   * `fairLockWaitTimeout` (issue 28: seen under load on a Cluster, the attempt's EVALSHA reaching Redis
   * 20 ms after the leave's although sent before it). The returned promise settles within `LEAVE_WAIT_MS`
   * of the attempts' answers or the leave's, whichever is first; the leave goes on in the background
   * after that. While the connection is down (`Connection.offline()`) it settles at once: the leave waits
   * in the client's queue, or fails, and awaiting it would only stretch a call past its wait time (the
   * waiter's deadline removes the entry if the leave never runs). Failures are logged, never thrown.
   */
  private leave(owner: string): Promise<void> {
    const flying = this.flying.get(owner);
    const left = flying ? Promise.allSettled([...flying]).then(() => this.sendLeave(owner)) : this.sendLeave(owner);
    if (this.core.connection.offline()) return Promise.resolve();
    if (!flying) return left;
    return new Promise<void>((resolve) => {
      const timer = outsideContexts(() => setTimeout(resolve, LEAVE_WAIT_MS + DEADLINE_GRACE_MS));
      void left.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** The leave script itself; see `leave`. */
  private async sendLeave(owner: string): Promise<void> {
    const { connection, executor, log } = this.core;
    try {
      await executor.run('fairLock.leave', () => FAIR_LEAVE.run(connection, { ...this.queueKeys(), owner, channel: this.channel, publishCommand: connection.publishCommand }), {
        idempotent: true,
        deadline: monotonic() + LEAVE_WAIT_MS,
      });
    } catch (error) {
      log.warn({ lock: this.name, owner, err: error }, 'could not leave the fair lock queue; the waiter is dropped at its deadline');
    }
  }
}
