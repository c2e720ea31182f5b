/**
 * The unlock protocol (src/lock/protocol/unlock.ts) through its own API: `unlock(lock, ctx, …)` for an
 * owner given explicitly, against a real redis-server: the guard (the hold count the client knows) on the
 * happy path and on a retry, the latch replay of a retry when the count may be unknown (an unsettled
 * lock), the release of a hold that ended (`IllegalMonitorStateError`, reported lost), and an unlock that
 * waits for the owner's acquisition in flight. Lost replies come from a TCP proxy.
 */
import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { IllegalMonitorStateError, LockLostError } from '../../../src/index.js';
import type { RLock } from '../../../src/lock/lock.js';
import { acquire } from '../../../src/lock/protocol/acquire.js';
import { unsettle } from '../../../src/lock/protocol/marks.js';
import { unlock } from '../../../src/lock/protocol/unlock.js';
import { FORCE_UNLOCK, UNLOCK } from '../../../src/lock/scripts.js';
import { useRedis } from '../../support/harness.js';
import { keys, lockClient, uniqueName, waitUntil } from '../../support/helpers.js';
import { holdCounts, newContext, releaseInFlight, spy, useProxied, type Spied } from './engine.js';

const env = useRedis();
const proxied = useProxied(env);

const newLock = (): RLock => lockClient(env.redis).getLock(`{${uniqueName('unlock')}}`);

/**
 * A lock on a client behind a new TCP proxy, a way to lose the reply of its next unlock script, and the
 * client's debug log lines (the executor logs each failed attempt it retries, with its error).
 */
async function lossyLock(): Promise<{ hooks: Spied; loseUnlockReply: () => Promise<void>; log: string[] }> {
  const log: string[] = [];
  const { proxy, client } = await proxied({ logger: pino({ level: 'debug' }, { write: (line: string) => void log.push(line) }) });
  await env.redis.scriptLoad(UNLOCK.source);
  return { hooks: spy(client.getLock(`{${uniqueName('unlock')}}`)), loseUnlockReply: () => proxy.loseReply({ match: UNLOCK.sha }), log };
}

/**
 * The unlock after a lost reply was sent at least twice, every attempt with `guard` (the hold count the
 * client knew, or '' unguarded). Normally one retry; the executor also retries a retry that failed
 * transiently (seen once, in CI of stop 41: a third attempt, its error not recorded), so further attempts
 * are allowed, each held to the same rule, and their logged failures are printed for the record.
 */
function expectRetried(hooks: Spied, log: string[], guard: string): void {
  const attempts = hooks.unlocks.map((u) => [u.attempt, u.guard]);
  if (attempts.length > 2) process.stdout.write(`unlock sent ${attempts.length} times after the lost reply:\n${log.filter((l) => l.includes('retrying')).join('')}`);
  expect(attempts.length).toBeGreaterThanOrEqual(2);
  expect(attempts).toEqual(attempts.map((_, i) => [i + 1, guard]));
}

/** The unlock latches of `hooks`' lock left in Redis. */
const latches = (hooks: Spied): Promise<string[]> => keys(env.redis, `${hooks.latchPrefix}*`);

describe('unlock (protocol/unlock.ts)', () => {
  it('a guarded unlock sends the hold count the client knows and writes no latch; the last one deletes the key', async () => {
    const hooks = spy(newLock());
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    await acquire(hooks, ctx, 0, undefined, undefined);
    await acquire(hooks, ctx, 0, undefined, undefined);
    await unlock(hooks, ctx);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '1' });
    expect(ctx.holds.get(hooks.holdKey)?.count).toBe(1);
    expect(hooks.core.watchdog.renews(hooks.key, owner)).toBe(true);
    await unlock(hooks, ctx);
    expect(hooks.unlocks.map((u) => [u.attempt, u.guard])).toEqual([
      [1, '2'],
      [1, '1'],
    ]);
    expect(await env.redis.exists(hooks.key)).toBe(0);
    expect(ctx.holds.has(hooks.holdKey)).toBe(false);
    expect(hooks.core.watchdog.renews(hooks.key, owner)).toBe(false);
    expect(await latches(hooks)).toEqual([]);
  });

  it('a guarded retry after a lost reply answers what the first attempt did (released), without a latch', async () => {
    const { hooks, loseUnlockReply, log } = await lossyLock();
    const ctx = newContext();
    await acquire(hooks, ctx, 0, undefined, undefined);
    let lost = false;
    void loseUnlockReply().then(() => (lost = true));
    await unlock(hooks, ctx);
    expect(lost).toBe(true);
    expectRetried(hooks, log, '1');
    expect(await env.redis.exists(hooks.key)).toBe(0);
    expect(ctx.holds.has(hooks.holdKey)).toBe(false);
    expect(await latches(hooks)).toEqual([]);
  });

  it('an unlock while the lock is unsettled is not guarded: its answer is latched, and the retry after a lost reply replays it (one hold released of two)', async () => {
    const { hooks, loseUnlockReply, log } = await lossyLock();
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    await acquire(hooks, ctx, 0, undefined, undefined);
    await acquire(hooks, ctx, 0, undefined, undefined);
    // A lost reply left the lock unsettled: the client may not know the owner's count.
    unsettle(ctx, hooks.holdKey, performance.now() + 30_000);
    let lost = false;
    void loseUnlockReply().then(() => (lost = true));
    await unlock(hooks, ctx);
    expect(lost).toBe(true);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [owner]: '1' });
    expectRetried(hooks, log, '');
    expect(new Set(hooks.unlocks.map((u) => u.latch)).size).toBe(1);
    expect(ctx.holds.get(hooks.holdKey)?.count).toBe(1);
    // The latch is deleted in the client's next batch, far sooner than its TTL.
    await waitUntil(async () => (await latches(hooks)).length === 0, 2000, 10, 'the latch deleted');
  });

  it('an unlock of a hold that ended throws IllegalMonitorStateError, forgets the hold, reports it lost and aborts the handle', async () => {
    const client = lockClient(env.redis);
    const hooks = spy(client.getLock(`{${uniqueName('unlock')}}`));
    const lost: string[] = [];
    client.on('lockLost', (e) => lost.push(e.reason));
    const ctx = newContext();
    const owner = hooks.ownerOf(ctx);
    await acquire(hooks, ctx, 0, undefined, undefined);
    await env.redis.del(hooks.key); // the hold ends without the client knowing
    const controller = new AbortController();
    const error = await unlock(hooks, ctx, undefined, controller).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IllegalMonitorStateError);
    expect(ctx.holds.has(hooks.holdKey)).toBe(false);
    expect(hooks.core.watchdog.renews(hooks.key, owner)).toBe(false);
    expect(lost).toEqual(['expired']);
    expect(controller.signal.reason).toBeInstanceOf(LockLostError);
    // The nil answer was latched (a retry must not read it as a release) and is deleted in the next batch.
    await waitUntil(async () => (await latches(hooks)).length === 0, 2000, 10, 'the nil latch deleted');
  });

  it("an unlock issued while the owner's acquisition is in flight waits for its outcome, then releases that grant", async () => {
    const hooks = spy(newLock());
    const ctx = newContext();
    const { taken, unlocksWhileInFlight } = await releaseInFlight(hooks, () => acquire(hooks, ctx, 0, undefined, undefined), () => unlock(hooks, ctx));
    // The unlock is not sent while the attempt is in flight; the attempt is answered (granted) first.
    expect(unlocksWhileInFlight).toBe(0);
    expect(taken).toBeDefined();
    expect(hooks.unlocks).toHaveLength(1);
    expect(await env.redis.exists(hooks.key)).toBe(0);
    expect(ctx.holds.has(hooks.holdKey)).toBe(false);
    expect(hooks.core.watchdog.renews(hooks.key, hooks.ownerOf(ctx))).toBe(false);
  });
});

describe('forceUnlock', () => {
  it('its reply lost once: retried (deleting the lock again is harmless), resolves, and the lock is free', async () => {
    const name = uniqueName('force');
    await lockClient(env.redis).getLock(name).acquire({ leaseMs: 30_000 }); // no watchdog: the key just goes
    const { proxy, client } = await proxied();
    await env.redis.scriptLoad(FORCE_UNLOCK.source);
    const lock = client.getLock(name);
    const lost = proxy.loseReply({ match: FORCE_UNLOCK.sha });
    // The retry finds the key gone (the lost attempt deleted it), so it answers false: what was deleted
    // by whom is not known after a lost reply, only that the lock is free.
    expect(typeof (await lock.forceUnlock())).toBe('boolean');
    await lost;
    expect(proxy.repliesLost).toBe(1);
    expect(await env.redis.exists(lock.key)).toBe(0);
  });
});
