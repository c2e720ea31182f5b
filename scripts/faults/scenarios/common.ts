/** The loop most scenarios share: wait for a holder, hurt it, wait until the lock works again. */
import { setTimeout as sleep } from 'node:timers/promises';
import { now } from '../history.js';
import type { Entry, RunContext } from '../scenario.js';

/** The lease of the scenarios that do not need another one (a short one keeps the suite short). */
export const LEASE_MS = 600;

/**
 * `runs` times: wait for a section to start, let it run `delayMs`, inject `fault(holder)`, then wait for
 * the next entry after the fault (by another worker when `other`), and let the system run half a lease.
 * `warmup`: entries to let happen first. Resolves with `runs`.
 */
export async function repeat(
  ctx: RunContext, runs: number, fault: (holder: Entry) => Promise<void>, options: { delayMs?: number; other?: boolean; warmup?: number } = {},
): Promise<number> {
  for (let i = 0; i < (options.warmup ?? 0); i++) await ctx.nextEnter(15_000);
  for (let i = 0; i < runs; i++) {
    const holder = await ctx.nextEnter(15_000);
    await sleep(options.delayMs ?? 20);
    await fault(holder);
    const healed = now();
    await ctx.nextEnter(4 * ctx.leaseMs + 15_000, (e) => (options.other ? e.w !== holder.w && e.t > holder.t : e.t > healed));
    await sleep(ctx.leaseMs / 2);
  }
  return runs;
}
