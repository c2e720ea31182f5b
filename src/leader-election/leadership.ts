import { IllegalMonitorStateError, LeadershipEndedError } from '../errors.js';
import type { LockHandle } from '../lock/handle.js';
import type { Observer } from '../observe/observer.js';

/**
 * This process's leadership of an election, from `RLeaderElection.campaign()` (etcd's `Election` after
 * `Campaign`, Curator's `LeaderLatch` while `hasLeadership()`): it lasts until `signal` aborts. End it with
 * `resign()` or `await using`.
 */
export class Leadership implements AsyncDisposable {
  private readonly controller = new AbortController();
  private resigned: Promise<void> | undefined;

  /** @internal */
  constructor(
    /** The election's name, as given to `getLeaderElection()`. */
    readonly election: string,
    /** The identity this process published as leader (`LeaderElectionOptions.identity`). */
    readonly identity: string,
    private readonly handle: LockHandle,
    private readonly observe: Observer,
  ) {
    observe.leadership(election, 'elected');
    const lost = (): void => this.end(new LeadershipEndedError(election, 'lost', { cause: handle.signal.reason }));
    if (handle.signal.aborted) lost();
    else handle.signal.addEventListener('abort', lost, { once: true });
  }

  /**
   * Aborts when the leadership ends, with a `LeadershipEndedError` as its reason: `'lost'` when the
   * election's lock was lost (the watchdog found it gone or could not renew it before its lease ended, or
   * the client shut down; the cause is the `LockLostError`), `'resigned'` after `resign()`. The watchdog
   * aborts it a drift margin before Redis can expire the lock, so while the process runs normally it stops
   * believing it leads before anyone else can be elected; a process paused (GC, SIGSTOP) past its lease
   * learns it only when it runs again: pass `term` to what it writes (a fenced resource).
   */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * The term: the fencing token of this leadership, from the election's counter (`relock:term:{name}`,
   * incremented by every election): strictly greater than every earlier leader's (etcd's leader key
   * revision). Give it to the resources the leader writes so that they refuse an older leader's writes.
   */
  get term(): bigint {
    return this.handle.token!;
  }

  /**
   * Ends the leadership (etcd's `Resign`, Curator's `LeaderLatch.close()`): aborts `signal` (reason
   * `'resigned'`, unless it had already aborted) and releases the election's lock, which publishes its
   * release so that a waiting campaigner takes over at once. Resolves also when the leadership had been
   * lost already (nothing to release). Calling it again returns the first call's promise. Throws
   * `RedisUnavailableError` when Redis could not be reached (the lock then expires within its lease).
   */
  resign(): Promise<void> {
    this.resigned ??= this.release();
    return this.resigned;
  }

  /** `await using leadership = await election.campaign()` resigns at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.resign();
  }

  private async release(): Promise<void> {
    const held = !this.controller.signal.aborted;
    this.end(new LeadershipEndedError(this.election, 'resigned'));
    if (!held) return;
    try {
      await this.handle.release();
    } catch (error) {
      if (!(error instanceof IllegalMonitorStateError)) throw error;
    }
  }

  /** Aborts the signal once, with `reason`, and counts the change. */
  private end(reason: LeadershipEndedError): void {
    if (this.controller.signal.aborted) return;
    this.observe.leadership(this.election, reason.reason);
    this.controller.abort(reason);
  }
}
