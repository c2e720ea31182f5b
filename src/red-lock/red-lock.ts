import { pause, roundDelay } from '../backoff.js';
import type { LockContext } from '../context.js';
import { outsideContexts } from '../context.js';
import type { Core } from '../core.js';
import { ClientClosedError, IllegalMonitorStateError, RedisUnavailableError, WrongTypeError } from '../errors.js';
import type { LockHandle } from '../lock/handle.js';
import { memberSteps as steps, type Grant } from '../lock/lock.js';
import { GroupLock, type Taken } from '../multi-lock/group-lock.js';
import { failures, releaseMembers, settleWithin } from '../multi-lock/members.js';
import { ResponseTimeoutError } from '../redis/failures.js';
import { monotonic, setLongTimeout } from '../time.js';

/** Clock drift allowance of the Redlock algorithm: `DRIFT_FACTOR × lease + DRIFT_MS`. */
export const DRIFT_FACTOR = 0.01;
export const DRIFT_MS = 2;
/** Delays between rounds: full jitter, 10 ms doubling up to 200 ms. */
const RETRY_BASE_MS = 10;
const RETRY_CAP_MS = 200;
/** With no wait limit, give up after this many rounds in a row in which no quorum of nodes answered. */
const UNREACHABLE_ROUNDS = 5;
/** `unlock()` and `release()` wait at most this long for nodes that do not answer. */
export const RELEASE_WAIT_MS = 1000;

/**
 * How long a round waits for answers, for a lease (or watchdog timeout) of `leaseMs`: a tenth of it, at
 * least 50 ms, at most 1 s. Nodes that have not answered by then count as failed for the round, so a dead
 * or paused node costs a round at most this much, never the client's `responseTimeout`; and only when the
 * other nodes cannot make a quorum without it.
 */
export function nodeTimeout(leaseMs: number): number {
  return Math.min(1000, Math.max(50, leaseMs / 10));
}

/** How a round ended. */
interface Round extends Partial<Taken> {
  /** Monotonic end of validity (`start + lease − drift`). */
  readonly validUntil: number;
  /** Nodes that answered (granted or busy). */
  readonly answered: number;
  /**
   * The nodes that could not be reached, alone, left fewer than a quorum: the round failed for want of
   * Redis, not because the lock was busy. Attempts the round aborted once busy answers had made a quorum
   * impossible are not counted as unreachable (they may well have been busy too).
   */
  readonly unavailable: boolean;
  /** The first failure of a node that did not answer. */
  readonly error: unknown;
}

/**
 * The Redlock algorithm over independent Redis masters (Redisson's deprecated `RedissonRedLock`): a
 * quorum of `floor(N / 2) + 1` members, each a lock from its own `LockClient` on its own master.
 *
 * A round sends one attempt to every node at once and waits for the answers, at most `nodeTimeout(lease)`;
 * once a quorum granted, the other nodes get as long again as that took (at least 10 ms), and once a
 * quorum is no longer possible the round stops. Attempts still in flight then are aborted, and a grant
 * that lands later is undone. It succeeds when a quorum granted and the validity, `lease − elapsed − drift` with
 * drift = `0.01 × lease + 2 ms`, is still positive; the handle from `acquire()` reports the validity as its
 * `leaseTime` and its signal aborts when the validity ends (with a lease) or when fewer than a quorum of
 * members remain held (without a lease, each member kept by its client's watchdog). Otherwise the round
 * releases every node it was granted (a node whose reply came late is undone by its lock) and the next
 * round follows after a random delay (full jitter, 10 ms doubling to 200 ms) while wait time remains.
 * Busy nodes are polled this way, not waited for with pub/sub.
 *
 * When the wait ends and the nodes that could not be reached in the last round left fewer than a quorum,
 * `RedisUnavailableError` is thrown instead of "busy" (with no wait limit: after 5 such rounds in a row).
 * An attempt the round cut short because busy answers had already made a quorum impossible (2 masters,
 * one busy; 3, one busy and one down) counts as busy, not as unreachable: `tryLock` resolves false and
 * `acquire` throws `LockAcquireTimeoutError`.
 *
 * **Prefer an `RLock` (with replica acknowledgement) plus fencing tokens (`getFencedLock`).** Redisson
 * deprecated RRedLock: its safety rests on timing assumptions (bounded pauses, network delays and clock
 * drift; Kleppmann, "How to do distributed locking", 2016): a process paused past the validity, or a node
 * whose clock jumps and expires the key early, lets a second client take a quorum while the first still
 * believes it holds the lock; and the independent masters share no counter, so RRedLock cannot hand out a
 * fencing token that a resource could check. It also needs N independent masters to operate. A single
 * master with replicas and fencing covers the same failures at lower cost: see docs/locks-more.md and
 * docs/fencing.md.
 *
 * Once a handle's quorum is lost (its signal aborts), the members it still holds are released at once
 * instead of being renewed until `release()`.
 *
 * Keys and channels are the members' own. Ownership and reentrancy as `RMultiLock`.
 */
export class RRedLock extends GroupLock {
  /** @internal Use `LockClient.getRedLock(...locks)`. */
  constructor(core: Core, locks: readonly unknown[]) {
    super(core, locks, true, (count) => Math.floor(count / 2) + 1);
  }

  /**
   * Releases one hold of the caller on every node (Redisson's `RedissonRedLock.unlock()`; outside any
   * context, on the nodes the calling task holds: see `GroupLock`), in parallel,
   * ignoring individual failures (a node that is down, a member that was never granted or has expired).
   * Waits at most 1 s for nodes that do not answer (their release goes on in the background). Throws
   * `IllegalMonitorStateError` only when every node answered that the caller held nothing.
   */
  override unlock(): Promise<void> {
    return super.unlock();
  }

  protected async releaseAll(releases: Array<Promise<void>>): Promise<void> {
    const results = await settleWithin(releases, RELEASE_WAIT_MS);
    const errors = failures(results);
    for (const err of errors) if (!(err instanceof IllegalMonitorStateError)) this.core.log.debug({ redLock: this.name, err }, 'RRedLock node release failed; ignored');
    if (errors.length === releases.length && errors.every((e) => e instanceof IllegalMonitorStateError)) {
      const first = errors[0];
      throw new IllegalMonitorStateError(this.name, first.owner, 'no node holds it');
    }
  }

  /**
   * Once a handle's quorum is lost, its surviving members are released at once (their watchdog renewals
   * stop before the unlocks are sent), as redis-semaphore's RedlockMutex does: the group is no longer held,
   * and renewing a minority would only keep other callers out. A failure is logged; that member then
   * expires with its lease. The handle's later `release()` resolves as usual.
   */
  protected override lost(survivors: LockHandle[]): void {
    for (const member of survivors) {
      member.release().catch((err: unknown) => this.core.log.debug({ redLock: this.name, err }, 'RRedLock member not released after the quorum was lost; it expires with its lease'));
    }
  }

  /**
   * Whether the caller holds a quorum of the members (`HEXISTS` on each node, as `RLock.isHeldByCurrentContext`;
   * outside any context, the calling task's newest acquisition's, see `GroupLock.membersHeld`). Nodes that do not answer within
   * 1 s count as not held. Throws `RedisUnavailableError` only when the nodes that answered cannot tell
   * (fewer than a quorum held, but enough did not answer to make one), `ClientClosedError`.
   */
  async isHeldByCurrentContext(): Promise<boolean> {
    const results = await settleWithin(this.membersHeld(), RELEASE_WAIT_MS);
    const held = results.filter((r) => r?.status === 'fulfilled' && r.value).length;
    const unknown = results.filter((r) => r?.status !== 'fulfilled').length;
    const definite = failures(results).find((e) => e instanceof ClientClosedError || e instanceof WrongTypeError);
    if (definite) throw definite;
    if (held >= this.quorum) return true;
    if (held + unknown < this.quorum) return false;
    throw new RedisUnavailableError(`RRedLock ${this.name} (${this.locks.length - unknown} of ${this.locks.length} nodes answered, ${this.quorum} needed)`, { cause: failures(results)[0] });
  }

  /** A handle's release releases every granted member, waiting at most 1 s, ignoring failures. */
  protected async finish(members: LockHandle[]): Promise<void> {
    await settleWithin(members.map((m) => m.release()), RELEASE_WAIT_MS);
  }

  /**
   * Rounds until a quorum is held with positive validity, or the wait ran out (undefined). Attempts a round
   * cut go on in the background (see `round`), at most one per member; a call that ends without the lock
   * (undefined, an error, the caller's abort) first waits for them, so that no late grant of it is left
   * when it returns.
   */
  protected async take(ctxs: LockContext[], waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Taken | undefined> {
    const started = monotonic();
    const deadline = Number.isFinite(waitMs) ? started + waitMs : undefined;
    const stragglers = new Array<Promise<void> | undefined>(this.locks.length);
    const drained = (): Promise<unknown> => Promise.all(stragglers.filter((s) => s !== undefined));
    let unreachable = 0;
    try {
      for (let rounds = 1; ; rounds++) {
        const round = await this.round(ctxs, leaseMs, signal, stragglers);
        if (round.holding) {
          if (this.core.debug) this.core.log.debug({ redLock: this.name, rounds, held: round.holding.held.length, validityMs: Math.round(round.validUntil - monotonic()) }, 'RRedLock acquired');
          return { holding: round.holding, validUntil: round.validUntil };
        }
        const quorumUnreachable = round.unavailable;
        unreachable = quorumUnreachable ? unreachable + 1 : 0;
        const left = deadline === undefined ? Infinity : deadline - monotonic();
        if (left <= 0 || (deadline === undefined && unreachable >= UNREACHABLE_ROUNDS)) {
          if (!quorumUnreachable) {
            await drained();
            return undefined;
          }
          throw new RedisUnavailableError(`RRedLock ${this.name} (${round.answered} of ${this.locks.length} nodes answered, ${this.quorum} needed)`, { cause: round.error });
        }
        await pause(Math.min(roundDelay(rounds, RETRY_BASE_MS, RETRY_CAP_MS), left), signal);
      }
    } catch (error) {
      await drained();
      throw error;
    }
  }

  /**
   * One round: one attempt on every node at once; once the outcome is known (see `decided`) the attempts
   * still in flight are aborted, then the quorum and validity are checked on the answers in hand. The
   * round does not wait for the aborted attempts: each goes on in the background as `stragglers[i]` (a
   * late grant is undone by its lock, waiting up to the client's `responseTimeout` for a reply that may
   * never come; a grant that was already on its way back is released), so a silent node costs the round
   * the node timeout alone. A member's next attempt is sent only once its straggler has settled (a node
   * still silent thus answers no round, as before): an owner never has two acquisitions of one member in
   * flight, so a late grant and its undo cannot interleave with the next round's grant on that member
   * (with a `responseTimeout` below the node timeout, a retried attempt's mark could otherwise make the
   * late grant's undo skip, leaving a hold count above the client's). When the caller aborted, the round
   * waits for every attempt (issue 27: nothing of an aborted call is left when it rejects).
   */
  private async round(ctxs: LockContext[], leaseMs: number | undefined, signal: AbortSignal | undefined, stragglers: Array<Promise<void> | undefined>): Promise<Round> {
    const { locks } = this;
    signal?.throwIfAborted();
    const lease = leaseMs ?? Math.min(...locks.map((lock) => steps.watchdogLease(lock)));
    const timeout = nodeTimeout(lease);
    const nodes = new AbortController();
    const onAbort = (): void => nodes.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const start = monotonic();
    const attempt = (i: number): Promise<Grant | undefined> => steps.acquire(locks[i], ctxs[i], 0, leaseMs, nodes.signal);
    const attempts = locks.map((_, i) => {
      const earlier = stragglers[i];
      if (!earlier) return attempt(i);
      // Sent once the member's last cut attempt has settled (at once if it has; not at all if this round ended first).
      return earlier.then(() => (nodes.signal.aborted ? Promise.reject(nodes.signal.reason as Error) : attempt(i)));
    });
    const impossible = await decided(attempts, this.quorum, start, timeout);
    const validUntil = start + lease - (DRIFT_FACTOR * lease + DRIFT_MS);
    signal?.removeEventListener('abort', onAbort);
    const cut = new RedisUnavailableError('RRedLock node', { cause: new ResponseTimeoutError(Math.round(monotonic() - start)) });
    nodes.abort(cut);
    // What answered by then (an attempt whose reply was already in settles within the microtasks before
    // a timer); when the caller aborted, everything (then every straggler has been undone).
    const results = signal?.aborted ? await Promise.allSettled(attempts) : await settleWithin(attempts, 0);
    results.forEach((r, i) => {
      if (r === undefined) stragglers[i] = this.straggler(ctxs, i, attempts[i]);
    });
    const grants = results.map((r) => (r?.status === 'fulfilled' ? r.value : undefined));
    const held = grants.flatMap((g, i) => (g ? [i] : []));
    const answered = results.filter((r) => r?.status === 'fulfilled').length;
    // An attempt cut short (still pending, or rejected with `cut`) because busy answers had already made a
    // quorum impossible is no sign of an unreachable node.
    const cutShort = (r: PromiseSettledResult<unknown> | undefined): boolean => r === undefined || (r.status === 'rejected' && r.reason === cut);
    const unreachable = results.filter((r) => r?.status !== 'fulfilled' && !(impossible && cutShort(r))).length;
    const unavailable = locks.length - unreachable < this.quorum;
    if (!signal?.aborted && held.length >= this.quorum && validUntil > monotonic()) return { holding: { held, grants }, validUntil, answered, unavailable, error: undefined };
    const errors = await releaseMembers(locks, ctxs, held);
    for (const err of errors) this.core.log.warn({ redLock: this.name, err }, 'could not release a RRedLock node after a failed round; it expires with its lease');
    signal?.throwIfAborted();
    // A node whose key holds another kind or other data answered for sure: that is the error, not an unreachable quorum.
    const wrongType = failures(results).find((e) => e instanceof WrongTypeError);
    if (wrongType) throw wrongType;
    return { validUntil, answered, unavailable, error: failures(results)[0] };
  }

  /**
   * An attempt on member `i` that its round cut and did not wait for: settled in the background. Aborted,
   * it rejects once its lock has undone any late grant (nothing to do); a grant that still reaches it
   * (its reply was on the way when the round cut it) is released, waiting at most 1 s, a failure logged
   * (the member then expires with its lease). Never rejects.
   */
  private async straggler(ctxs: LockContext[], i: number, attempt: Promise<Grant | undefined>): Promise<void> {
    const grant = await attempt.catch(() => undefined);
    if (!grant) return;
    const [result] = await settleWithin([steps.release(this.locks[i], ctxs[i])], RELEASE_WAIT_MS);
    if (result?.status === 'rejected') this.core.log.warn({ redLock: this.name, err: result.reason as unknown }, 'could not release a RRedLock node granted after its round; it expires with its lease');
  }
}

/** After a quorum granted, the other nodes get as long again as the quorum took, at least this, to answer. */
const STRAGGLER_GRACE_MS = 10;

/**
 * Resolves once the round's outcome is known: every attempt settled, so many failed (busy or error) that
 * a quorum is no longer possible (then to true), or `timeoutMs` passed since `start` (false). Once a quorum granted, the others
 * get a grace of as long again as that took (at least `STRAGGLER_GRACE_MS`, within the timeout), so that
 * a RRedLock holds every node that answers about as fast as the quorum did, and a dead node costs little.
 */
function decided(attempts: ReadonlyArray<Promise<Grant | undefined>>, quorum: number, start: number, timeoutMs: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    let granted = 0;
    let failed = 0;
    let timer = outsideContexts(() => setLongTimeout(() => resolve(false), timeoutMs));
    const count = (grant: Grant | undefined): void => {
      if (grant) granted++;
      else failed++;
      if (attempts.length - failed < quorum || granted + failed === attempts.length) {
        clearTimeout(timer);
        resolve(attempts.length - failed < quorum);
      } else if (grant && granted === quorum) {
        const elapsed = monotonic() - start;
        clearTimeout(timer);
        timer = outsideContexts(() => setLongTimeout(() => resolve(false), Math.min(Math.max(elapsed, STRAGGLER_GRACE_MS), timeoutMs - elapsed)));
      }
    };
    for (const attempt of attempts) attempt.then(count, () => count(undefined));
  });
}
