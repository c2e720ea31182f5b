import { IN_PROCESS_ONLY, isFloor, REQUEST_COMMANDS, type Impl } from '../adapters/types.js';
import { Child, epochNow } from '../children.js';
import { commandDelta, Latencies, sleep, type Figures } from '../measure.js';
import { FULL_RUN_ONLY, inRounds, type BenchContext, type Row, type Scenario } from '../scenario.js';

const PROCESSES = 4;
const WAITERS = 1000;
const HOLD_MS = 1;

/**
 * Scenario 4: 1000 waiters on one lock, 250 in each of 4 processes, each taking the lock, holding it
 * 1 ms, releasing it and queueing again. Flowing phase: hand-off latency (a release began → the next
 * hold began, across processes) and Redis requests per second and per hand-off. Stalled phase: one
 * holder keeps the lock; Redis requests per second while nothing is released (what waiting costs
 * over time).
 */
export const waiters: Scenario = {
  id: 4,
  key: 'waiters',
  title: `${WAITERS} waiters on one lock across ${PROCESSES} processes`,
  description: `${WAITERS / PROCESSES} tasks in each of ${PROCESSES} processes loop on one lock (hold ${HOLD_MS} ms). Hand-off = a release began → the next hold began. Stalled = one holder keeps the lock while ${WAITERS - 1} wait.`,
  columns: [
    { figure: 'handoffsPerSec', heading: 'hand-offs/s', decimals: 0 },
    { figure: 'handoffP50Ms', heading: 'hand-off p50 ms', decimals: 2 },
    { figure: 'handoffP99Ms', heading: 'hand-off p99 ms', decimals: 1 },
    { figure: 'redisCommandsPerSec', heading: 'requests/s', decimals: 0 },
    { figure: 'redisCommandsPerAcquire', heading: 'requests/hand-off', decimals: 1 },
    { figure: 'stalledCommandsPerSec', heading: 'requests/s, stalled', decimals: 0 },
    { figure: 'gaveUpPerSec', heading: 'gave up/s', decimals: 0 },
  ],
  async run(ctx) {
    const impls = ctx.impls.filter((i) => !isFloor(i) && !IN_PROCESS_ONLY.includes(i) && !(ctx.quick && i === 'sesamecare-redlock'));
    const left: Row[] = ctx.quick && ctx.impls.includes('sesamecare-redlock') ? [{ impl: 'sesamecare-redlock', figures: {}, skipped: FULL_RUN_ONLY }] : [];
    const rows = await inRounds(ctx, impls.map((impl) => ({ impl })), ctx.quick ? 1 : 2, 's4', ({ impl }, round) => once(ctx, impl, `bench:${ctx.runId}:s4:${impl}:${round}`));
    return [...rows, ...left];
  },
};

async function once(ctx: BenchContext, impl: Impl, key: string): Promise<Figures> {
  const warmMs = ctx.quick ? 700 : 2000;
  const windowMs = ctx.quick ? 2000 : 6000;
  const stallMs = ctx.quick ? 1000 : 3000;
  const children = Array.from({ length: PROCESSES }, () => new Child({ kind: 'waiters', impl, url: ctx.probe.url, key, tasks: WAITERS / PROCESSES, holdMs: HOLD_MS }));
  try {
    await Promise.all(children.map((c) => c.next('ready')));
    for (const child of children) child.send({ type: 'start' });
    await sleep(warmMs);
    const from = epochNow();
    const before = await ctx.probe.commandStats();
    await sleep(windowMs);
    const after = await ctx.probe.commandStats();
    const to = epochNow();

    children[0].send({ type: 'stall', ms: stallMs });
    await children[0].next('stalling', 30_000);
    await sleep(100);
    const stallStart = performance.now();
    const stallBefore = await ctx.probe.commandStats();
    await sleep(stallMs - 300);
    const stallAfter = await ctx.probe.commandStats();
    const stallSeconds = (performance.now() - stallStart) / 1000;

    for (const child of children) child.send({ type: 'collect', from: from - 2000, to });
    const reports = await Promise.all(children.map((c) => c.next<{ holds: Array<[number, number]>; gaveUp: number; seconds: number }>('events')));
    const holds = reports.flatMap((r) => r.holds).sort((a, b) => a[0] - b[0]);
    const handoff = new Latencies();
    let overlaps = 0;
    for (let i = 1; i < holds.length; i++) {
      const [began] = holds[i];
      if (began < from) continue;
      const gap = began - holds[i - 1][1];
      // Clocks of different processes agree to well under 0.1 ms; more than that before the previous release began is two holders at once.
      if (gap < -0.1) overlaps++;
      else handoff.record(Math.max(gap, 0.001));
    }
    const seconds = windowMs / 1000;
    const requests = REQUEST_COMMANDS[impl];
    const flowing = commandDelta(before, after, requests).requests;
    return {
      handoffsPerSec: handoff.count / seconds,
      ...handoff.figures('handoff', true),
      redisCommandsPerSec: flowing / seconds,
      redisCommandsPerAcquire: handoff.count === 0 ? NaN : flowing / handoff.count,
      stalledCommandsPerSec: commandDelta(stallBefore, stallAfter, requests).requests / stallSeconds,
      gaveUpPerSec: reports.reduce((n, r) => n + r.gaveUp / r.seconds, 0),
      overlaps,
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}
