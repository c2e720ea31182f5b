/**
 * The owner's unsettled marks (see `LockContext.unsettled`): after an attempt failed ambiguously (its reply
 * lost), a grant of it may be in Redis without the client knowing, until the mark's `until`. The
 * acquisition (acquire.ts), the unlock guard (unlock.ts) and the undo of late grants (undo.ts) read them.
 * @internal Not exported from the package.
 */
import type { LockContext, Unsettled } from '../../context.js';

/** The owner's unsettled mark on the lock of `holdKey`, if any. */
export function unsettled(ctx: LockContext, holdKey: string): Unsettled | undefined {
  return ctx.unsettled?.get(holdKey);
}

/** Marks the lock of `holdKey` unsettled for `ctx` (a grant may be in Redis) until `until` (monotonic ms); returns the mark. */
export function unsettle(ctx: LockContext, holdKey: string, until: number): Unsettled {
  let mark = unsettled(ctx, holdKey);
  if (mark) mark.until = Math.max(mark.until, until);
  else (ctx.unsettled ??= new Map<string, Unsettled>()).set(holdKey, (mark = { until, tried: false }));
  return mark;
}

/** The owner knows the lock's state again: a grant was recorded, or its latest attempt found the lock busy. */
export function settle(ctx: LockContext, holdKey: string): void {
  ctx.unsettled?.delete(holdKey);
}
