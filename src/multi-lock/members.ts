import type { LockContext } from '../context.js';
import { outsideContexts } from '../context.js';
import { InvalidArgumentError, LockLostError } from '../errors.js';
import { LockHandle } from '../lock/handle.js';
import { memberSteps as steps, RLock, type Grant } from '../lock/lock.js';
import { monotonic, setLongTimeout } from '../time.js';

/**
 * What the multi-lock and RRedLock share: checking their members, resolving the caller's owner on each,
 * releasing a set of members, and the handle over several member holds.
 */

/**
 * Checks the members given to `getMultiLock`/`getRedLock`: at least one, each an `RLock` (or a subclass:
 * fenced, spin, …), no lock twice (same client and key: outside a context two objects for one key are two
 * owners, and the group would wait for itself). With `distinctClients`, every member must come from its
 * own `LockClient` (RRedLock's independent masters). Throws `InvalidArgumentError` naming `locks`.
 */
export function checkMembers(locks: readonly unknown[], distinctClients: boolean): RLock[] {
  if (locks.length === 0) throw new InvalidArgumentError('locks', 'give at least one lock, e.g. getMultiLock(client.getLock("a"), client.getLock("b"))');
  const seen = new Set<string>();
  return locks.map((lock, i) => {
    if (!(lock instanceof RLock)) throw new InvalidArgumentError('locks', `locks[${i}] is not a relock lock (getLock, getFencedLock, getSpinLock, …)`);
    const id = distinctClients ? steps.clientId(lock) : `${steps.clientId(lock)} ${lock.key}`;
    if (seen.has(id)) {
      throw new InvalidArgumentError(
        'locks',
        distinctClients
          ? `locks[${i}] comes from the same LockClient as an earlier lock: a RRedLock needs one lock per independent Redis master`
          : `locks[${i}] ("${lock.name}") is given twice for the same client`,
      );
    }
    seen.add(id);
    return lock;
  });
}

/** The name of a group in errors and handles: the members' names, e.g. `[a, b]`. */
export function groupName(locks: readonly RLock[]): string {
  return `[${locks.map((l) => l.name).join(', ')}]`;
}

/**
 * The owner context of the caller on each member, resolved once so that every round uses the same owners:
 * the caller's context, or outside any context a new owner per member for this call.
 */
export function contextsOf(locks: readonly RLock[]): LockContext[] {
  return locks.map((lock) => steps.context(lock));
}

/**
 * Releases one hold on each member in `indexes`, in parallel, and waits for all. Resolves to the errors
 * (an empty array when every release went through).
 */
export async function releaseMembers(locks: readonly RLock[], ctxs: readonly LockContext[], indexes: readonly number[]): Promise<unknown[]> {
  const results = await Promise.allSettled(indexes.map((i) => steps.release(locks[i], ctxs[i])));
  return results.flatMap((r): unknown[] => (r.status === 'rejected' ? [r.reason as unknown] : []));
}

/** The errors among settled results (`undefined` entries: still pending). */
export function failures(results: ReadonlyArray<PromiseSettledResult<unknown> | undefined>): unknown[] {
  return results.flatMap((r): unknown[] => (r?.status === 'rejected' ? [r.reason as unknown] : []));
}

/**
 * Waits until every promise settled or `ms` passed, whichever comes first. Resolves to the results so far
 * (`undefined` for a promise still pending); a promise that settles later is still observed, so its
 * rejection is never unhandled.
 */
export function settleWithin<T>(promises: ReadonlyArray<Promise<T>>, ms: number): Promise<Array<PromiseSettledResult<T> | undefined>> {
  const results = new Array<PromiseSettledResult<T> | undefined>(promises.length).fill(undefined);
  if (promises.length === 0) return Promise.resolve(results);
  return new Promise((resolve) => {
    let pending = promises.length;
    const timer = outsideContexts(() => setLongTimeout(() => resolve(results), ms));
    const settle = (i: number, result: PromiseSettledResult<T>): void => {
      results[i] = result;
      if (--pending > 0) return;
      clearTimeout(timer);
      resolve(results);
    };
    promises.forEach((p, i) => void p.then((value) => settle(i, { status: 'fulfilled', value }), (reason: unknown) => settle(i, { status: 'rejected', reason })));
  });
}

/** What a group acquisition holds: the grant of each member it holds, by index. */
export interface Holding {
  readonly held: readonly number[];
  readonly grants: ReadonlyArray<Grant | undefined>;
}

/**
 * The handle of a group hold. It holds one member handle per held member (their signals abort when a
 * member is lost: watchdog loss, lease end); the group's signal aborts with a `LockLostError` once fewer
 * than `quorum` members remain, or at `validUntil` (monotonic ms) when given. When it aborts because
 * fewer than `quorum` remain, `lost` (if given) gets the member handles still held (RRedLock releases
 * them). `release()` hands the member handles to `finish`, which releases them (the multi-lock waits for
 * all and throws the first error; RRedLock waits a bounded time and ignores failures).
 */
export function groupHandle(options: {
  name: string;
  locks: readonly RLock[];
  ctxs: readonly LockContext[];
  holding: Holding;
  leaseMs: number | undefined;
  quorum: number;
  validUntil?: number | undefined;
  finish: (members: LockHandle[]) => Promise<void>;
  lost?: ((survivors: LockHandle[]) => void) | undefined;
}): LockHandle {
  const { name, locks, ctxs, holding, leaseMs, quorum } = options;
  const controller = new AbortController();
  const members = holding.held.map((i) => steps.handle(locks[i], ctxs[i], holding.grants[i]!, leaseMs));
  let lost = 0;
  const onMemberLost = (event: Event): void => {
    lost++;
    const reason = (event.target as AbortSignal).reason as LockLostError | undefined;
    if (members.length - lost < quorum && !controller.signal.aborted) {
      controller.abort(new LockLostError(name, reason?.reason ?? 'expired', { cause: reason }));
      options.lost?.(members.filter((m) => !m.signal.aborted));
    }
  };
  for (const member of members) member.signal.addEventListener('abort', onMemberLost, { once: true });
  let timer: NodeJS.Timeout | undefined;
  if (options.validUntil !== undefined) {
    timer = outsideContexts(() => setLongTimeout(() => controller.abort(new LockLostError(name, 'lease-ended')), options.validUntil! - monotonic()));
    timer.unref();
  }
  const owner = members.map((m) => m.owner).join(',');
  const validity = options.validUntil === undefined ? leaseMs : Math.max(0, Math.round(options.validUntil - monotonic()));
  return new LockHandle(
    name,
    owner,
    controller.signal,
    validity,
    undefined,
    async () => {
      if (timer) clearTimeout(timer);
      for (const member of members) member.signal.removeEventListener('abort', onMemberLost);
      await options.finish(members);
    },
    undefined,
    () => {
      for (const member of members) member.stopRefresh();
    },
  );
}
