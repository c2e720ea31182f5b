/**
 * The nemesis: every fault the suite can inject, each recorded in the history with the span it covered.
 * Processes: SIGKILL, SIGSTOP/SIGCONT, an event-loop block inside a worker. Redis: restart without
 * persistence, SIGSTOP, a script that never ends (BUSY), `CLIENT PAUSE`, killing subscriber
 * connections, expiring a key early. Network (through a worker's proxy): latency, blackhole, reset, a cut
 * after a request was forwarded.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { now } from './history.js';
import type { CutRule, ProxyMode } from './proxy.js';
import type { RunContext } from './scenario.js';

/** The section `w` holds now, if any (so the fault is attributed to it). */
function heldBy(ctx: RunContext, w: string): string | undefined {
  const holder = ctx.holder();
  return holder?.w === w ? holder.sec : undefined;
}

/** SIGKILL worker `w`, inside section `sec` (default: the holder's, when `w` is the holder). */
export async function killWorker(ctx: RunContext, w: string, inside?: string): Promise<void> {
  const worker = ctx.worker(w);
  const sec = inside ?? heldBy(ctx, w);
  worker.killed = true;
  worker.child.kill('SIGKILL');
  const t = now();
  ctx.record({ kind: 'kill', t0: t, t1: t, w, sec });
  await worker.exited;
}

/** SIGSTOP worker `w` for `ms`, then SIGCONT. */
export async function pauseWorker(ctx: RunContext, w: string, ms: number): Promise<void> {
  const worker = ctx.worker(w);
  const sec = heldBy(ctx, w);
  worker.signal('SIGSTOP');
  const t0 = now();
  await sleep(ms);
  worker.signal('SIGCONT');
  ctx.record({ kind: 'pause', t0, t1: now(), w, sec, detail: { ms } });
}

/**
 * Asks worker `w` to block its event loop for `ms` in its next section, after its last lock check and
 * before its write (recorded from the worker's log as a `block` fault).
 */
export function blockWorker(ctx: RunContext, w: string, ms: number): void {
  ctx.worker(w).send({ cmd: 'block', ms });
}

/** Kills Redis (SIGKILL, no persistence) and starts it again empty on the same port after `downMs`; `detail` goes into the record. */
export async function restartRedis(ctx: RunContext, downMs: number, detail: Record<string, unknown> = {}): Promise<void> {
  const t0 = now();
  await ctx.redis.kill();
  if (downMs > 0) await sleep(downMs);
  await ctx.redis.restart();
  ctx.record({ kind: 'restart', t0, t1: now(), detail: { downMs, ...detail } });
}

/** SIGSTOP redis-server for `ms`, then SIGCONT. */
/**
 * Redis killed and restarted at once without persistence while holder `w` is stopped (SIGSTOP); `w` runs
 * again once another worker entered on the empty server, or after `maxPauseMs` (keep it under a watchdog
 * interval: a longer stop is a stall, which excuses overlaps). The holder's first renewal after the
 * restart then comes after the second grant, for certain: a renewal that does not check its owner would
 * renew the new holder's lock. Records the restart and the pause (no recovery time of its own); resolves
 * with whether the other worker entered first.
 */
export async function restartBehindHolder(ctx: RunContext, w: string, maxPauseMs: number): Promise<boolean> {
  const worker = ctx.worker(w);
  const sec = heldBy(ctx, w);
  worker.signal('SIGSTOP');
  const t0 = now();
  const entered = ctx.nextEnter(maxPauseMs, (e) => e.w !== w).then(() => true, () => false);
  await restartRedis(ctx, 0);
  const first = await entered;
  worker.signal('SIGCONT');
  ctx.record({ kind: 'pause', t0, t1: now(), w, sec, detail: { maxPauseMs, otherEnteredFirst: first }, recovery: false });
  return first;
}

export async function pauseRedis(ctx: RunContext, ms: number): Promise<void> {
  ctx.redis.pause();
  const t0 = now();
  await sleep(ms);
  ctx.redis.resume();
  ctx.record({ kind: 'redis-pause', t0, t1: now(), detail: { ms } });
}

/** `CLIENT PAUSE ms WRITE`: writes (and scripts) wait, keys do not expire. */
export async function clientPause(ctx: RunContext, ms: number): Promise<void> {
  const t0 = now();
  await ctx.admin.sendCommand(['CLIENT', 'PAUSE', String(ms), 'WRITE']);
  await sleep(ms);
  ctx.record({ kind: 'client-pause', t0, t1: t0 + ms, detail: { ms } });
}

/**
 * Runs a script that never ends from another connection for `ms` (with `busy-reply-threshold` lowered,
 * every other command gets BUSY), then `SCRIPT KILL`.
 */
export async function busyScript(ctx: RunContext, ms: number): Promise<void> {
  const client = createClient({ url: ctx.redis.url });
  client.on('error', () => {});
  await client.connect();
  const t0 = now();
  const running = client.sendCommand(['EVAL', 'while true do end', '0']).catch(() => {});
  await sleep(ms);
  await ctx.admin.sendCommand(['SCRIPT', 'KILL']).catch(() => {});
  const t1 = now();
  await running;
  client.destroy();
  ctx.record({ kind: 'busy', t0, t1, detail: { ms } });
}

/** `CLIENT KILL` of every subscriber connection but the orchestrator's own. Resolves with how many. */
export async function killSubscribers(ctx: RunContext): Promise<number> {
  const list = await ctx.admin.sendCommand<string>(['CLIENT', 'LIST', 'TYPE', 'pubsub']);
  const ids = [...list.matchAll(/^id=(\d+)/gm)].map((m) => m[1]).filter((id) => Number(id) !== ctx.watcherId);
  const t = now();
  await Promise.all(ids.map((id) => ctx.admin.sendCommand(['CLIENT', 'KILL', 'ID', id]).catch(() => 0)));
  // No recovery to time: waiters are not holders (many-waiters asserts that every waiter enters instead).
  ctx.record({ kind: 'pubsub-kill', t0: t, t1: t, detail: { connections: ids.length }, recovery: false });
  return ids.length;
}

/** Calls of one command so far (`INFO commandstats`). */
export async function commandCalls(ctx: RunContext, command: string): Promise<number> {
  const info = await ctx.admin.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}

/**
 * Cuts every worker's subscriber connections (through their proxies, which refuse the reconnect) and
 * keeps them down across releases of the lock: until the lock has been free, with no script call
 * reaching Redis, for `quietMs` (a release was published while nobody was subscribed, and no waiter is
 * trying: every one sleeps with nobody to wake it), or for `maxMs`. Then the subscribers may reconnect.
 * Only a waiter's timer fallback (on the holder's TTL) or its wake-up after the resubscribe can get the
 * lock taken again. Records a `pubsub-kill` spanning the cut; resolves with whether the quiet free lock
 * was seen.
 */
export async function cutSubscribersAcrossRelease(ctx: RunContext, quietMs: number, maxMs: number): Promise<boolean> {
  const t0 = now();
  let connections = 0;
  for (const w of ctx.workerIds()) connections += ctx.proxy(w).severSubscribers();
  let quiet = false;
  try {
    let calls = -1;
    let quietFrom = t0;
    while (now() - t0 < maxMs) {
      const [held, seen] = await Promise.all([ctx.admin.exists(ctx.lockKey), commandCalls(ctx, 'evalsha')]);
      const t = now();
      if (held > 0 || seen !== calls) quietFrom = t;
      calls = seen;
      if (t - quietFrom >= quietMs) {
        quiet = true;
        break;
      }
      await sleep(10);
    }
  } finally {
    for (const w of ctx.workerIds()) ctx.proxy(w).restoreSubscribers();
  }
  ctx.record({ kind: 'pubsub-kill', t0, t1: now(), detail: { connections, acrossRelease: true, quiet }, recovery: false });
  return quiet;
}

/** `PEXPIRE key 1`: the key expires at once, as after a forward jump of the server's clock. */
export async function expireEarly(ctx: RunContext): Promise<void> {
  const holder = ctx.holder();
  const t = now();
  await ctx.admin.pExpire(ctx.lockKey, 1);
  ctx.record({ kind: 'expire', t0: t, t1: t, w: holder?.w, sec: holder?.sec });
}

/** Puts worker `w`'s proxy in `mode` for `ms`, then back to pass-through. */
export async function netFault(ctx: RunContext, w: string, mode: Exclude<ProxyMode, { kind: 'pass' }>, ms: number): Promise<void> {
  const sec = heldBy(ctx, w);
  const proxy = ctx.proxy(w);
  proxy.setMode(mode);
  const t0 = now();
  await sleep(ms);
  proxy.setMode({ kind: 'pass' });
  ctx.record({ kind: mode.kind, t0, t1: now(), w, sec, detail: { ...mode, ms } });
}

/**
 * Arms a cut on worker `w`'s proxy and waits up to `timeoutMs` for it; resolves with the time of the cut
 * (recorded, with `recovery`: whether the time to the next entry by another worker is measured), or
 * undefined when no matching request came.
 */
export async function cut(ctx: RunContext, w: string, rule: CutRule, what: string, timeoutMs: number, recovery: boolean): Promise<number | undefined> {
  const proxy = ctx.proxy(w);
  const timeout = new AbortController();
  const t = await Promise.race([proxy.armCut(rule), sleep(timeoutMs, undefined, { signal: timeout.signal }).catch(() => undefined)]);
  timeout.abort();
  if (t === undefined) {
    proxy.disarm();
    return undefined;
  }
  ctx.record({ kind: 'cut', t0: t, t1: t + (rule.refuseMs ?? 0), w, detail: { what, refuseMs: rule.refuseMs ?? 0 }, recovery });
  return t;
}
