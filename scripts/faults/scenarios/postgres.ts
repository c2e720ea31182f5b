/**
 * postgres-fenced-writes (issue 33): the holders of a fenced lock write to a real PostgreSQL through
 * relock's helper (`relock/fencing`: `fencedStatement` and `fencedTransaction` in turns, see postgres.ts),
 * one write every `WRITE_EVERY_MS`, each after checking the handle's signal. Two faults, in turns:
 * - pause: the holder is SIGSTOPped after it wrote, until another holder's write advanced the fence past
 *   its token (so past its lease), then SIGCONT: its next write carries a stale token and must be refused.
 * - restart: the holder is SIGSTOPped after it wrote, Redis is killed and restarted at once without
 *   persistence (the fence counter starts again at 1 while the table keeps the holder's token), and the
 *   holder runs again once the restarted counter handed its token to another holder: the documented token
 *   reuse (docs/fencing.md), which this scenario shows and bounds.
 * The fencing checker judges the database's own history (the writes the fence accepted, in the order
 * PostgreSQL applied them). The bound of the reuse, checked here: a stale write accepted after a restart
 * carries a token no higher than the fence counter when Redis died (here the stopped holder's: it held the
 * lock, and had written, so the table's highest was that token too) and comes before the table accepts any
 * higher token; so per restart one token is shared, by at most two sections, each with at most its own
 * writes (`MAX_WRITES`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { now, type WorkerEvent } from '../history.js';
import { restartRedis } from '../nemesis.js';
import type { OracleOp } from '../oracle.js';
import { postgresUnreachable } from '../postgres.js';
import { violation, type ScenarioResult } from '../result.js';
import type { Entry, History, RunContext, Scenario } from '../scenario.js';
import { LEASE_MS } from './common.js';

const WRITE_EVERY_MS = 40;
const WORK_MS: [number, number] = [300, 600];
/** The most writes one section makes. */
export const MAX_WRITES = Math.ceil(WORK_MS[1] / WRITE_EVERY_MS);
/** How long the nemesis waits for what it waits on (the fence to advance, the counter to catch up). */
const WAIT_MS = 20_000;

/** Polls the fence table every 10 ms until `ok(highest)` holds, for up to `ms`; resolves with whether it did. */
async function fenceUntil(ctx: RunContext, ok: (highest: bigint) => boolean, ms: number): Promise<boolean> {
  const { db, resource } = ctx.postgres!;
  const deadline = now() + ms;
  while (now() < deadline) {
    if (ok(await db.highest(resource))) return true;
    await sleep(10);
  }
  return false;
}

/**
 * The next holder whose write the fence accepted: its entry, once the table's highest token is its token
 * (a holder refused while the counter catches up after a restart is passed over).
 */
async function writingHolder(ctx: RunContext): Promise<Entry> {
  for (;;) {
    const holder = await ctx.nextEnter(15_000);
    const tok = BigInt(holder.tok!);
    if (await fenceUntil(ctx, (highest) => highest === tok, WORK_MS[1])) return holder;
  }
}

/** The holder stopped until another holder's write advanced the fence past its token (at most 4 leases + 1 s). */
async function pauseUntilSuperseded(ctx: RunContext): Promise<void> {
  const holder = await writingHolder(ctx);
  const tok = BigInt(holder.tok!);
  const worker = ctx.worker(holder.w);
  worker.signal('SIGSTOP');
  const t0 = now();
  // Stopped inside a fencedTransaction, it holds the fence row's lock: nobody can write until it runs again
  // (the figure then says superseded: false), so the wait ends a few leases after the lease.
  const superseded = await fenceUntil(ctx, (highest) => highest > tok, 4 * ctx.leaseMs + 1000);
  worker.signal('SIGCONT');
  ctx.record({ kind: 'pause', t0, t1: now(), w: holder.w, sec: holder.sec, detail: { superseded } });
  await ctx.nextExit(holder.sec, WAIT_MS).catch(() => undefined);
}

/**
 * The holder stopped, Redis restarted empty, and the holder continued once another holder entered with its
 * token again (the counter caught up); records the restart with the counter's value when Redis died.
 */
async function restartBehindWriter(ctx: RunContext): Promise<void> {
  const holder = await writingHolder(ctx);
  const worker = ctx.worker(holder.w);
  worker.signal('SIGSTOP');
  const t0 = now();
  const reused = ctx.nextEnter(WAIT_MS, (e) => e.w !== holder.w && e.tok === holder.tok).then(() => true, () => false);
  // The stopped holder holds the lock: nobody else is granted, so the counter is its token.
  await restartRedis(ctx, 0, { counter: holder.tok });
  const caughtUp = await reused;
  worker.signal('SIGCONT');
  ctx.record({ kind: 'pause', t0, t1: now(), w: holder.w, sec: holder.sec, detail: { reusedToken: holder.tok, caughtUp } });
  await ctx.nextExit(holder.sec, WAIT_MS).catch(() => undefined);
}

/** The reuse after each restart: the bound (violations) and the figures (`result.extra.restarts`). */
export function checkTokenReuse(history: History, result: ScenarioResult): string[] {
  const writes = (history.writes ?? []).filter((op): op is Exclude<OracleOp, { op: 'set' }> => op.op === 'write');
  const attempts = history.events.filter((e): e is Extract<WorkerEvent, { ev: 'write' }> => e.ev === 'write');
  const restarts = history.nemesis.filter((n) => n.kind === 'restart');
  const out: string[] = [];
  const figures = restarts.map((r, i) => {
    const counter = BigInt(String(r.detail?.counter));
    const next = restarts[i + 1]?.t0 ?? Infinity;
    const after = writes.filter((op) => op.t > r.t0 && op.t < next);
    const closing = after.findIndex((op) => BigInt(op.tok) > counter);
    const window = closing < 0 ? after : after.slice(0, closing);
    const shared = window.filter((op) => BigInt(op.tok) === counter);
    const late = after.slice(closing < 0 ? after.length : closing).filter((op) => BigInt(op.tok) <= counter);
    const sections = new Set(shared.map((op) => op.sec));
    if (late.length > 0) out.push(violation('fencing', `${late.length} write(s) with a token ≤ ${counter} (the counter when Redis died) accepted after the table had accepted a higher one`));
    if (sections.size > 2) out.push(violation('fencing', `token ${counter} was accepted from ${sections.size} sections after one restart (at most 2: the stopped holder and the one the restarted counter handed it to)`));
    const perSection = [...sections].map((sec) => shared.filter((op) => op.sec === sec).length);
    if (perSection.some((n) => n > MAX_WRITES)) out.push(violation('fencing', `a section wrote ${Math.max(...perSection)} times with the shared token ${counter} (at most ${MAX_WRITES}, its section's writes)`));
    const refused = attempts.filter((e) => !e.ok && e.t0 > r.t1 && e.t0 < (window.at(-1)?.t ?? next)).length;
    const firstAfter = after.find((op) => BigInt(op.tok) >= counter);
    return {
      counterAtRestart: Number(counter), sharedTokenWrites: shared.length, sharedBySections: sections.size, refusedWhileCatchingUp: refused,
      catchUpMs: firstAfter ? Math.round(firstAfter.t - r.t1) : null, windowClosedMs: closing < 0 ? null : Math.round(after[closing].t - r.t1),
    };
  });
  result.extra.restarts = figures;
  // What each holder stopped past its lease did when it ran again: its next write refused (the fence at
  // work), or told by its watchdog first (no write).
  result.extra.pauses = history.nemesis.filter((n) => n.kind === 'pause' && n.detail?.superseded !== undefined).map((n) => {
    const next = attempts.find((e) => e.sec === n.sec && e.t0 > n.t1);
    return { superseded: n.detail!.superseded, nextWrite: next ? (next.ok ? `accepted (token ${next.tok})` : `refused (token ${next.tok} < ${next.highest})`) : 'none: told first' };
  });
  // The database's history holds only accepted writes: the refused ones are the workers' (StaleTokenError).
  result.staleWritesRejected = attempts.filter((e) => !e.ok).length;
  result.extra.writesAccepted = writes.length;
  result.extra.writesRefused = attempts.filter((e) => !e.ok).length;
  if (restarts.length > 0 && !figures.some((f) => f.sharedTokenWrites > 0)) out.push('harness: no restart showed the token reuse (the restarted counter never handed out a token the table held)');
  return out;
}

export const postgresFencedWrites: Scenario = {
  name: 'postgres-fenced-writes',
  title: `holders write to PostgreSQL through relock/fencing (fencedStatement and fencedTransaction, every ${WRITE_EVERY_MS} ms); the holder SIGSTOPped until a newer holder wrote, or SIGSTOPped while Redis restarts without persistence, in turns`,
  expect: 'stale writes refused by the fence (StaleTokenError); after a restart without persistence the table refuses every write until the counter catches up, then the one token the stopped holder and its successor share is accepted from both (the documented reuse, bounded: tokens ≤ the counter when Redis died, before any higher token, two sections)',
  excuses: ['holder-paused', 'redis-restarted'],
  skip: () => postgresUnreachable(),
  setup: () => ({ workers: 3, leaseMs: LEASE_MS, workMs: WORK_MS, postgres: { writeEveryMs: WRITE_EVERY_MS } }),
  async nemesis(ctx) {
    // A paused holder is sometimes told before its next write (its watchdog's timer came due first): no
    // stale write to refuse that time; three pauses make a quick run (and its --prove row) attempt one.
    const turns = ctx.quick ? ['pause', 'pause', 'pause', 'restart'] : ['pause', 'pause', 'restart', 'pause', 'restart', 'pause', 'pause', 'restart', 'pause', 'restart'];
    for (const turn of turns) {
      await (turn === 'pause' ? pauseUntilSuperseded(ctx) : restartBehindWriter(ctx));
      await sleep(ctx.leaseMs / 2);
    }
    ctx.figures.faults = turns.join(', ');
    return turns.length;
  },
  check: checkTokenReuse,
};
