/** Network faults between one worker and Redis, through its proxy: latency, blackhole, reset, lost replies. */
import { FENCED_ACQUIRE } from '../../../src/fenced-lock/scripts.js';
import { UNLOCK } from '../../../src/lock/scripts.js';
import type { WorkerEvent } from '../history.js';
import { cut, netFault } from '../nemesis.js';
import type { History, Scenario, Setup } from '../scenario.js';
import { LEASE_MS, repeat } from './common.js';

/** Sections longer than a lease plus a watchdog interval: a faulted holder is still inside when its lease ends. */
const longSections = (): Setup => ({ workers: 3, leaseMs: LEASE_MS, proxy: true, workMs: [1000, 1400] });
/** Short sections: the cut scenarios need many acquisitions and releases. */
const setup = (): Setup => ({ workers: 3, leaseMs: LEASE_MS, proxy: true, workMs: [60, 150] });

/** A granted fenced acquire, as RESP: `*2 :1 <token>`. */
const GRANTED_REPLY = '*2\r\n:1\r\n';

/** `lost` events of worker `w` between `t0` and `t1`. */
const lossesDuring = (events: readonly WorkerEvent[], w: string | undefined, t0: number, t1: number): number =>
  events.filter((e) => e.ev === 'lost' && e.w === w && e.t >= t0 && e.t <= t1).length;

export const networkScenarios: Scenario[] = [
  {
    name: 'net-latency',
    title: "latency on the holder's connection for 2 leases: alternately 1/12 of a lease each way (renewals still in time) and a whole lease each way (renewals too late)",
    expect: 'none: with small latency nothing is lost; with large latency the holder gives up at its local deadline, which comes before the key expires',
    setup: longSections,
    nemesis: (ctx) => {
      let i = 0;
      return repeat(ctx, ctx.quick ? 2 : 10, (h) => netFault(ctx, h.w, { kind: 'latency', ms: i++ % 2 === 0 ? ctx.leaseMs / 12 : ctx.leaseMs }, 2 * ctx.leaseMs));
    },
    check(history: History, result) {
      const small = history.nemesis.filter((n) => n.kind === 'latency' && Number(n.detail?.ms) < history.leaseMs / 3);
      const falseLosses = small.reduce((sum, n) => sum + lossesDuring(history.events, n.w, n.t0, n.t1), 0);
      result.extra.lossesUnderSmallLatency = falseLosses;
      return falseLosses > 0 ? [`${falseLosses} lock(s) lost under a latency of ${history.leaseMs / 12} ms each way (renewals had time)`] : [];
    },
  },
  {
    name: 'net-blackhole',
    title: "the holder's connection blackholed for 2 leases (bytes held, nothing fails), then delivered",
    expect: 'none: the holder must give up at its local deadline, before its key expires and a waiter enters',
    setup: longSections,
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 2 : 10, (h) => netFault(ctx, h.w, { kind: 'blackhole' }, 2 * ctx.leaseMs)),
  },
  {
    name: 'net-reset',
    title: "the holder's connections reset, and new ones refused, for 2 leases",
    expect: 'none: renewals fail fast and are retried until the local deadline; the holder gives up before its key expires',
    setup: longSections,
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 1 : 10, (h) => netFault(ctx, h.w, { kind: 'reset' }, 2 * ctx.leaseMs)),
  },
  {
    name: 'unlock-reply-lost',
    title: "the holder's unlock forwarded to Redis, its reply dropped and the connection reset (ambiguous outcome)",
    expect: 'none. The retried unlock must replay the first answer (unlock latch): no error reaches the caller',
    setup,
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 2 : 15, async (h) => {
      await cut(ctx, h.w, { match: UNLOCK.sha }, 'unlock', 10_000, true);
    }, { delayMs: 0 }),
    check(history, result) {
      const cuts = history.nemesis.filter((n) => n.kind === 'cut').length;
      const errors = Object.values(result.releaseErrors).reduce((a, b) => a + b, 0);
      result.extra.ambiguousUnlocks = cuts;
      return [
        ...(cuts === 0 ? ['no unlock reply was cut'] : []),
        ...(errors > 0 ? [`${errors} release(s) failed after a lost unlock reply: ${JSON.stringify(result.releaseErrors)}`] : []),
      ];
    },
  },
  {
    name: 'acquire-reply-lost',
    title: "a waiter's granted acquire forwarded, its reply dropped and the connection reset; the acquire retries",
    expect: 'none. The retry must recognise its own grant (hold count 1, not 2) so the release frees the lock',
    setup: () => ({ ...setup(), checkHolds: true }),
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 2 : 15, async (h) => {
      const waiter = ctx.workerIds().find((w) => w !== h.w)!;
      await cut(ctx, waiter, { match: FENCED_ACQUIRE.sha, replyPrefix: GRANTED_REPLY }, 'acquire', 15_000, false);
    }, { delayMs: 0 }),
    check(history, result) {
      const violations: string[] = [];
      const cuts = history.nemesis.filter((n) => n.kind === 'cut');
      const holds: number[] = [];
      for (const c of cuts) {
        const enter = history.events.find((e) => e.ev === 'enter' && e.w === c.w && e.t > c.t0);
        const read = enter && history.events.find((e): e is Extract<WorkerEvent, { ev: 'holds' }> => e.ev === 'holds' && e.sec === (enter as { sec: string }).sec);
        if (!read) violations.push(`worker ${c.w} did not enter after its acquire reply was lost`);
        else holds.push(read.holds);
      }
      result.extra.ambiguousAcquires = cuts.length;
      result.extra.holdCountsAfterRetry = holds;
      if (cuts.length === 0) violations.push('no acquire reply was cut');
      if (holds.some((n) => n !== 1)) violations.push(`hold count after a retried acquire: ${holds.join(', ')} (must be 1)`);
      return violations;
    },
  },
  {
    name: 'acquire-orphan',
    title: "a waiter's granted acquire reply dropped, then its connections refused for 3 s so every retry fails (an orphan lock)",
    expect: 'none. The orphan is not renewed by anyone and must expire within one lease, after which another worker enters',
    setup,
    nemesis: (ctx) => repeat(ctx, ctx.quick ? 1 : 10, async (h) => {
      const waiter = ctx.workerIds().find((w) => w !== h.w)!;
      await cut(ctx, waiter, { match: FENCED_ACQUIRE.sha, replyPrefix: GRANTED_REPLY, refuseMs: 3000 }, 'acquire', 15_000, true);
    }, { delayMs: 0, other: true }),
    check(history, result) {
      const violations: string[] = [];
      const lifetimes: number[] = [];
      for (const c of history.nemesis.filter((n) => n.kind === 'cut')) {
        const expiry = history.expirations.find((x) => x.key === history.lockKey && x.t > c.t0);
        if (!expiry) violations.push(`the orphan of ${c.w} never expired`);
        else lifetimes.push(Math.round(expiry.t - c.t0));
        const adopted = history.events.find((e) => e.ev === 'enter' && e.w === c.w && e.t > c.t0 && (!expiry || e.t < expiry.t));
        if (adopted) violations.push(`${c.w} entered (${(adopted as { sec: string }).sec}) although every retry of its acquire was refused`);
      }
      result.extra.orphanLifetimesMs = lifetimes;
      // The orphan's lease counts from the grant, just before the cut; expiry is seen within ~10 ms (hz 100).
      const bound = history.leaseMs + ORPHAN_SLACK_MS;
      if (lifetimes.length === 0) violations.push('no acquire reply was cut');
      if (lifetimes.some((ms) => ms > bound)) violations.push(`an orphan lived ${Math.max(...lifetimes)} ms (> one lease + ${ORPHAN_SLACK_MS} ms)`);
      return violations;
    },
  },
];

/** Slack on "an orphan expires within one lease": Redis's active expiry cycle (hz 100) and the notification. */
const ORPHAN_SLACK_MS = 150;
