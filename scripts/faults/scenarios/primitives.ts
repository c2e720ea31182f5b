/**
 * The other primitives under faults: the read-write lock (readers and writers; holders SIGKILLed and
 * SIGSTOPped, Redis restarted, unlock replies lost) and the plain semaphore `RSemaphore` (permit holders
 * SIGSTOPped, acquire and release replies lost: every permit must come back, exactly).
 */
import { ACQUIRE, ADD } from '../../../src/semaphore/scripts.js';
import { RW_UNLOCK } from '../../../src/read-write-lock/scripts.js';
import { cut, pauseWorker, restartRedis } from '../nemesis.js';
import { violation } from '../result.js';
import type { History, Scenario, Setup } from '../scenario.js';
import type { ScenarioResult } from '../result.js';
import { LEASE_MS, repeat } from './common.js';
import { holderKills, paused } from './process.js';

const PERMITS = 3;
/** A granted semaphore acquire, as RESP (`answer(1)`). */
const GRANTED_REPLY = ':1\r\n';

const rw = (base: Partial<Setup> = {}): Setup => ({ workers: 3, leaseMs: LEASE_MS, mode: 'rw', ...base });
const plain = (base: Partial<Setup> = {}): Setup => ({ workers: 5, leaseMs: LEASE_MS, mode: 'plain-semaphore', permits: PERMITS, ...base });

/** The checks of an unlock whose reply was cut: cuts happened, and no release failed. */
function unlockCuts(history: History, result: ScenarioResult): string[] {
  const cuts = history.nemesis.filter((n) => n.kind === 'cut').length;
  const errors = Object.values(result.releaseErrors).reduce((a, b) => a + b, 0);
  result.extra.ambiguousCalls = cuts;
  return [
    ...(cuts === 0 ? ['no reply was cut'] : []),
    ...(errors > 0 ? [violation('belief', `${errors} release(s) failed after a lost reply: ${JSON.stringify(result.releaseErrors)}`)] : []),
  ];
}

/** Every permit of the plain semaphore came back, exactly (no permit lost nor made by a retried call). */
function permitsBack(_history: History, result: ScenarioResult): string[] {
  const left = result.extra.permitsAtEnd;
  return left === PERMITS ? [] : [violation('occupancy', `${String(left)} permit(s) free at the end instead of ${PERMITS}`)];
}

export const readWriteScenarios: Scenario[] = [
  holderKills({
    name: 'rw-holder-kill',
    title: 'readers and writers of a read-write lock (40 % writers); the holder SIGKILLed inside its section',
    expect: 'none: a writer never overlaps anyone; a killed holder\'s hold expires within one lease and another worker enters',
  }, 1, 15, { mode: 'rw' }),
  {
    ...paused('sigstop', 1.5, 'rw', { mode: 'rw' }),
    title: 'readers and writers of a read-write lock; the holder SIGSTOPped for 1.5× its lease, then SIGCONT',
    expect: 'the paused holder (reader or writer) overlaps the next writer until it runs again, and is told within one watchdog interval after it does',
  },
  {
    name: 'rw-redis-restart',
    title: 'readers and writers of a read-write lock; Redis killed and restarted at once without persistence',
    expect: 'the holders believe until their next renewal finds their hold gone (one watchdog interval plus the reconnect); meanwhile a writer may enter',
    excuses: ['redis-restarted'],
    setup: () => rw({ workMs: [1000, 1400] }),
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 1 : 10, () => restartRedis(ctx, 0), { warmup: 2 }),
  },
  {
    name: 'rw-unlock-reply-lost',
    title: "readers and writers of a read-write lock; a holder's unlock forwarded, its reply dropped and the connection reset",
    expect: 'none. The retried unlock must replay the first answer (unlock latch): no error reaches the caller, and the lock is free for the next',
    setup: () => rw({ proxy: true }),
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 2 : 15, async (h) => {
      await cut(ctx, h.w, { match: RW_UNLOCK.sha }, 'unlock', 10_000, true);
    }, { delayMs: 0 }),
    check: unlockCuts,
  },
];

export const plainSemaphoreScenarios: Scenario[] = [
  {
    name: 'semaphore-holder-sigstop',
    title: `permit holders of a plain semaphore (${PERMITS} permits, no lease) SIGSTOPped for 3 leases, then SIGCONT`,
    expect: `none: a plain permit has no lease, so a stopped holder keeps it and never more than ${PERMITS} sections are open; every permit is back at the end`,
    setup: () => plain(),
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 1 : 8, (h) => pauseWorker(ctx, h.w, 3 * ctx.leaseMs)),
    check: permitsBack,
  },
  {
    name: 'semaphore-acquire-reply-lost',
    title: `a waiter's granted acquire of a plain semaphore (${PERMITS} permits) forwarded, its reply dropped and the connection reset; the acquire retries`,
    expect: `none. The retry must replay the first answer (request latch): one permit taken, not two, so all ${PERMITS} are back at the end`,
    setup: () => plain({ proxy: true }),
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 2 : 15, async (h) => {
      const waiter = ctx.workerIds().find((w) => w !== h.w)!;
      await cut(ctx, waiter, { match: ACQUIRE.sha, replyPrefix: GRANTED_REPLY }, 'acquire', 15_000, false);
    }, { delayMs: 0 }),
    check: (history, result) => [...permitsBack(history, result), ...(history.nemesis.some((n) => n.kind === 'cut') ? [] : ['no acquire reply was cut'])],
  },
  {
    name: 'semaphore-release-reply-lost',
    title: `a holder's release of a plain semaphore (${PERMITS} permits) forwarded, its reply dropped and the connection reset; the release retries`,
    expect: `none. The retry must replay the first answer (request latch): one permit given back, not two, so never more than ${PERMITS} sections open and exactly ${PERMITS} permits at the end`,
    setup: () => plain({ proxy: true }),
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 2 : 15, async (h) => {
      await cut(ctx, h.w, { match: ADD.sha }, 'release', 10_000, true);
    }, { delayMs: 0 }),
    check: (history, result) => [...permitsBack(history, result), ...unlockCuts(history, result)],
  },
];
