/**
 * The default wait of a hash lock (src/lock/protocol/wait.ts) through its own API, `waitOnChannel(lock,
 * waiter, first)`, against a real redis-server: a waiter whose first attempt was refused subscribes to the
 * lock's wait channel, is woken by the holder's unlock message (not by the timer on the holder's long
 * TTL), falls back on that timer when the holder publishes nothing (its lease runs out), and gives up at
 * the end of its wait time. The waiter is built here; its attempts run the lock's acquire script.
 */
import { describe, expect, it } from '@jest/globals';
import type { LockContext } from '../../../src/context.js';
import { acquire } from '../../../src/lock/protocol/acquire.js';
import type { Grant, Refused, Waiter } from '../../../src/lock/protocol/hooks.js';
import { unlock } from '../../../src/lock/protocol/unlock.js';
import { waitOnChannel } from '../../../src/lock/protocol/wait.js';
import { waitDeadline, type Attempt } from '../../../src/pubsub/wait.js';
import { useRedis } from '../../support/harness.js';
import { lockClient, numsub, subscribers, uniqueName, waitUntil } from '../../support/helpers.js';
import { holdCounts, newContext, spy, type Spied } from './engine.js';

const env = useRedis();

const newLock = (): Spied => spy(lockClient(env.redis).getLock(`{${uniqueName('wait')}}`));

/** A waiter of `ctx` on `hooks`' lock for `waitMs`, whose attempts run the acquire script (`wakes`: what woke each). */
function waiterOf(hooks: Spied, ctx: LockContext, waitMs: number): Waiter & { wakes: Array<string | undefined> } {
  const owner = hooks.ownerOf(ctx);
  const wakes: Array<string | undefined> = [];
  return {
    owner,
    waitMs,
    deadline: waitDeadline(waitMs, performance.now()),
    signal: undefined,
    liveBefore: undefined,
    seen: undefined,
    wakes,
    async next(wake): Promise<Attempt<Grant>> {
      wakes.push(wake);
      const sentAt = performance.now();
      const result = await hooks.runAcquire(owner, '30000', '', '0');
      return result.granted ? { acquired: true, value: { sentAt } } : { acquired: false, retryAfterMs: result.ttl };
    },
  };
}

/** Takes `hooks`' lock for a new owner with `leaseMs`, and the refused first attempt of another owner. */
async function busy(hooks: Spied, leaseMs: number): Promise<{ holder: LockContext; first: Refused }> {
  const holder = newContext();
  await acquire(hooks, holder, 0, leaseMs, undefined);
  return { holder, first: { acquired: false, retryAfterMs: await env.redis.pTTL(hooks.key) } };
}

describe('waitOnChannel (protocol/wait.ts)', () => {
  it("is woken by the holder's unlock message on the lock's channel, long before the holder's TTL", async () => {
    const hooks = newLock();
    const { holder, first } = await busy(hooks, 30_000);
    const ctx = newContext();
    const waiter = waiterOf(hooks, ctx, 10_000);
    const waiting = waitOnChannel(hooks, waiter, first);
    await subscribers(env.redis, hooks.waitChannel(waiter.owner)!, 1);
    // The attempt made once subscribed (a release while subscribing is not missed; woken by no message,
    // so told 'timer') is refused too.
    await waitUntil(() => waiter.wakes.length >= 1, 2000, 5, 'the attempt after subscribing');
    const released = performance.now();
    await unlock(hooks, holder);
    const grant = await waiting;
    expect(grant).toBeDefined();
    expect(performance.now() - released).toBeLessThan(5000);
    // Woken by the message (after the attempt once subscribed, and any polls while subscribing was slow).
    expect(waiter.wakes.at(-1)).toBe('message');
    expect(waiter.wakes.filter((w) => w === 'message')).toHaveLength(1);
    expect(await holdCounts(env.redis, hooks.key)).toEqual({ [waiter.owner]: '1' });
    await env.redis.del(hooks.key);
  });

  it("falls back on the timer at the holder's TTL when no message comes (the lease ran out)", async () => {
    const hooks = newLock();
    const { first } = await busy(hooks, 300);
    const waiter = waiterOf(hooks, newContext(), 10_000);
    const started = performance.now();
    // Granted long before the wait time ends, though nobody publishes: the timer on the holder's TTL woke it
    // (on a loaded machine the subscription may come late: it is waited for no longer than that TTL, and
    // the waiter polls until it is live).
    expect(await waitOnChannel(hooks, waiter, first)).toBeDefined();
    expect(performance.now() - started).toBeLessThan(5000);
    expect(waiter.wakes.length).toBeGreaterThan(0);
    expect(waiter.wakes).not.toContain('message');
    await env.redis.del(hooks.key);
  });

  it('resolves to undefined when the wait time runs out, and leaves the channel', async () => {
    const hooks = newLock();
    const { holder, first } = await busy(hooks, 30_000);
    const waiter = waiterOf(hooks, newContext(), 200);
    expect(await waitOnChannel(hooks, waiter, first)).toBeUndefined();
    await waitUntil(async () => (await numsub(env.redis, hooks.waitChannel(waiter.owner)!)) === 0, 2000, 10, 'the channel left');
    await unlock(hooks, holder);
  });
});
