/**
 * What a granted hold becomes for its caller: a `LockHandle` (release, `extend`, `stopRefresh`, a signal
 * that follows the watchdog or the lease), a new lease on a held lock (`setLease`), and the take-over of a
 * hold another process acquired under a caller-given identifier (`takeOver`, `acquiredExternally`).
 * @internal Not exported from the package.
 */
import { recordAcquired, type LockContext } from '../../context.js';
import { LockLostError } from '../../errors.js';
import { monotonic } from '../../time.js';
import { HoldSignal } from '../../watchdog/hold.js';
import { LockHandle } from '../handle.js';
import { remember } from './acquire.js';
import type { Grant, LockHooks } from './hooks.js';
import { unlock } from './unlock.js';

/** Builds the handle of an acquisition of `lock` by `ctx`: its signal follows the watchdog, or the explicit lease. */
export function handleOf(lock: LockHooks, ctx: LockContext, grant: Grant, leaseMs: number | undefined): LockHandle {
  const { core } = lock;
  const owner = lock.ownerOf(ctx);
  const hold = new HoldSignal(core.watchdog, lock.name, lock.key, [owner]);
  if (leaseMs === undefined) hold.followRenewals();
  else hold.followLease(grant.sentAt, leaseMs);
  const extend = async (ms: number): Promise<boolean> => {
    const sentAt = await lock.setLease(ctx, ms);
    if (sentAt === undefined || hold.signal.aborted) return false;
    hold.followLease(sentAt, ms);
    return true;
  };
  let renewed = leaseMs === undefined;
  const stopRefresh = (): void => {
    if (!renewed) return;
    renewed = false;
    hold.stop(true);
    core.watchdog.release(lock.key, owner);
  };
  return new LockHandle(
    lock.name,
    owner,
    hold.signal,
    leaseMs,
    grant.token,
    async () => {
      hold.stop(true);
      await unlock(lock, ctx, renewed, hold.abortable);
    },
    lock.extendable ? extend : undefined,
    stopRefresh,
  );
}

/**
 * Sets the TTL of `lock` to `leaseMs` if `ctx`'s owner holds it (the multi-lock's final lease, as
 * Redisson's `expireAsync` on each member), with the lock's renewal script. Resolves to the send time
 * (monotonic ms), or `undefined` when the owner no longer holds it.
 */
export async function setLease(lock: LockHooks, ctx: LockContext, leaseMs: number): Promise<number | undefined> {
  lock.core.checkOpen();
  let sentAt = 0;
  const reply = await lock.core.executor.run(
    'lock.setLease',
    () => {
      sentAt = monotonic();
      return lock.renewal.script.run(lock.core.connection, [lock.key], [String(leaseMs), lock.ownerOf(ctx)]);
    },
    { idempotent: true, expects: lock.expects },
  );
  return reply[0] === 1 ? sentAt : undefined;
}

/**
 * Takes over a hold that `ctx`'s caller-given owner already has in Redis (`acquiredExternally`): sets its
 * lease (the watchdog's when none is given, then renewed by this client) with the owner-checked renewal
 * script, records one hold and returns its handle. Throws `LockLostError` when the owner holds nothing.
 */
export async function takeOver(lock: LockHooks, ctx: LockContext, leaseMs: number | undefined): Promise<LockHandle> {
  const { core } = lock;
  const owner = lock.ownerOf(ctx);
  const hold = leaseMs === undefined ? lock.registerHold(owner) : undefined;
  let sentAt: number | undefined;
  try {
    sentAt = await lock.setLease(ctx, leaseMs ?? core.watchdog.leaseMs);
  } finally {
    if (sentAt === undefined) hold?.abandon();
  }
  if (sentAt === undefined) throw new LockLostError(lock.name, 'expired', { cause: new Error(`no hold of "${owner}" to take over`) });
  hold?.confirm(sentAt);
  recordAcquired(ctx, lock.holdKey, leaseMs === undefined, core.debug ? monotonic() : 0);
  remember(ctx, leaseMs === undefined ? Infinity : sentAt + leaseMs);
  return handleOf(lock, ctx, { sentAt }, leaseMs);
}
