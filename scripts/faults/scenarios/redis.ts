/** Faults of Redis itself: restarted empty, stalled by a script, paused by a client, stopped, a key expired early. */
import { busyScript, clientPause, expireEarly, pauseRedis, restartBehindHolder, restartRedis } from '../nemesis.js';
import type { Scenario, Setup } from '../scenario.js';
import { LEASE_MS, repeat } from './common.js';

/** Sections that last past the holder's next renewal, so the holder finds its key gone while inside. */
const setup = (): Setup => ({ workers: 3, leaseMs: LEASE_MS, workMs: [500, 900] });
/** Sections longer than a lease plus a watchdog interval: a stalled holder is still inside when its lease ends. */
const longSections = (): Setup => ({ workers: 3, leaseMs: LEASE_MS, workMs: [1000, 1400] });

/** redis-restart-stale-renewal: its lease (watchdog interval 1500 ms) and the longest stop of the holder. */
const STALE_LEASE_MS = 4500;
const STALE_PAUSE_MS = 1300;

export const redisScenarios: Scenario[] = [
  {
    name: 'redis-restart',
    title: 'Redis killed and restarted at once without persistence while the lock is held',
    expect: 'the holder believes until its next renewal finds the key gone (at most a watchdog interval plus the reconnect); meanwhile a waiter gets the lock from the empty server. The fence counter restarts at 1, so the new holders are fenced out by the resource until the counter catches up',
    excuses: ['redis-restarted'],
    // Sections long enough that a holder never told is still inside well past the detection bound.
    setup: () => ({ ...setup(), workMs: [1500, 1900] }),
    // Warm-up: the fence counter must be past the few grants a waiter gets before the holder is told,
    // or the restarted counter hands out the holder's own token again (see staleWritesAcceptedTokenReuse).
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 2 : 10, () => restartRedis(ctx, 0), { warmup: 3 }),
  },
  {
    name: 'redis-restart-stale-renewal',
    title: `Redis restarted without persistence while the holder is stopped (SIGSTOP, at most ${STALE_PAUSE_MS} ms, under a watchdog interval); it runs again once another worker entered on the empty server, so its next renewal comes after that grant`,
    expect: "the holder's renewal finds its hold gone (a renewal checks the owner, so it never renews the new holder's lock) and the holder is told; the overlap with the new holder is excused by the restart, up to one loss-detection bound after Redis was back. " +
      'The proof of the exclusion checker (--prove) runs here: with the owner check removed the stale holder renews the new lock and is never told',
    excuses: ['redis-restarted'],
    // A lease long enough that the stop ends before the holder's deadline and stays under a watchdog interval
    // (not a stall); sections long enough that a holder never told overlaps well past the restart's window.
    setup: () => ({ workers: 3, leaseMs: STALE_LEASE_MS, workMs: [3000, 3400] }),
    async nemesis(ctx) {
      let first = 0;
      const runs = await repeat(ctx, ctx.quick ? 1 : 5, async (h) => void (first += (await restartBehindHolder(ctx, h.w, STALE_PAUSE_MS)) ? 1 : 0), { warmup: 3 });
      ctx.figures.secondGrantBeforeStaleRenewal = first;
      return runs;
    },
  },
  {
    name: 'redis-restart-delayed',
    title: 'Redis killed, restarted empty 1.5 leases later',
    expect: 'none: every lease ends while Redis is down, so every holder gives up before anyone can acquire (the "delayed restart" rule)',
    setup: () => ({ ...setup(), workMs: [700, 900] }),
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 1 : 10, () => restartRedis(ctx, 1.5 * ctx.leaseMs), { warmup: 3 }),
  },
  {
    name: 'redis-busy',
    title: 'a script that never ends stalls Redis for 2 leases (BUSY replies after busy-reply-threshold 100 ms), then SCRIPT KILL',
    expect: 'none: no key expires while the script runs, and holders give up at their local deadline; BUSY must be retried, never reported as "not held"',
    setup: () => ({ ...longSections(), redisArgs: ['--busy-reply-threshold', '100'] }),
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 1 : 10, () => busyScript(ctx, 2 * ctx.leaseMs)),
  },
  {
    name: 'redis-client-pause',
    title: 'CLIENT PAUSE WRITE for 2 leases while the lock is held',
    expect: 'none: keys do not expire during the pause; the holder gives up at its deadline, its queued renewal then runs late',
    setup: longSections,
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 1 : 10, () => clientPause(ctx, 2 * ctx.leaseMs)),
  },
  {
    name: 'redis-sigstop',
    title: 'redis-server SIGSTOPped for 2 leases, then SIGCONT',
    expect: 'none: the holder gives up at its local deadline, before Redis can expire its key and grant it again',
    setup: longSections,
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 1 : 10, () => pauseRedis(ctx, 2 * ctx.leaseMs)),
  },
  {
    name: 'key-expired-early',
    title: 'the lock key expired early (PEXPIRE 1: a forward jump of the server clock) while held',
    expect: 'the holder believes until its next renewal returns 0 (at most a watchdog interval); a waiter enters at once',
    excuses: ['key-expired-early'],
    setup,
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 2 : 15, () => expireEarly(ctx), { delayMs: 10, other: true }),
  },
];
