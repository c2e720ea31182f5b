/**
 * The two semaphores read a single number the same way (a count of permits, as Redisson's
 * `tryAcquire(int permits)`), an acquisition on a semaphore whose permits were never set logs a warning
 * once per name, and `await using` on a hold that already ended does not throw (so a business error in
 * the block reaches the caller as it is).
 */
import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { LockLostError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis();

/** A pino logger whose lines are collected in `lines`. */
function collectingLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, stream), lines };
}

describe('semaphores agree', () => {
  it('tryAcquire(3) takes 3 permits on both semaphores (one attempt)', async () => {
    const relock = lockClient(env.redis);
    const plain = relock.getSemaphore(uniqueName('sem'));
    const expirable = relock.getPermitExpirableSemaphore(uniqueName('exp'));
    await plain.trySetPermits(4);
    await expirable.trySetPermits(4);
    expect(await plain.tryAcquire(3)).toBe(true);
    const ids = await expirable.tryAcquire(3);
    expect(ids).toHaveLength(3);
    expect([await plain.availablePermits(), await expirable.availablePermits()]).toEqual([1, 1]);
    expect([await plain.tryAcquire(3), await expirable.tryAcquire(3)]).toEqual([false, undefined]);
    await expirable.release(ids!);
    const handle = await expirable.acquire(2);
    expect(handle.ids).toHaveLength(2);
    await handle.release();
  });

  it('an acquisition on a semaphore whose permits were never set waits and logs one warning per name', async () => {
    const { logger, lines } = collectingLogger();
    const relock = lockClient(env.redis, { logger });
    const name = uniqueName('unset');
    const semaphore = relock.getSemaphore(name);
    expect(await semaphore.tryAcquire()).toBe(false);
    expect(await semaphore.tryAcquire(20, 'ms')).toBe(false);
    const waiting = semaphore.acquire();
    await waitUntil(() => relock.stats().subscriptions === 1);
    await semaphore.trySetPermits(1);
    await waiting;
    const other = uniqueName('unset-exp');
    expect(await relock.getPermitExpirableSemaphore(other).tryAcquire()).toBeUndefined();
    const warnings = lines.filter((l) => l.level === 40).map((l) => l.msg);
    expect(warnings).toEqual([
      `semaphore "${name}" has no permits: they were never set (or it was deleted or expired); acquisitions wait until trySetPermits(), addPermits() or release() sets them`,
      `expirable-semaphore "${other}" has no permits: they were never set (or it was deleted or expired); acquisitions wait until trySetPermits(), setPermits() or addPermits() sets them`,
    ]);
  });
});

describe('await using a hold that already ended', () => {
  it('a lock whose lease ran out: the block\'s own error reaches the caller as it is; the signal told of the end', async () => {
    const relock = lockClient(env.redis);
    const lock = relock.getLock(uniqueName('dispose'));
    // The signal aborts a drift margin *before* Redis expires the hold, so a release at that moment
    // still finds the hold and succeeds: the block's end must come after Redis expired it, or the test
    // passes with a disposal that throws (the old `return this.release()`).
    const ended = (signal: AbortSignal): Promise<boolean> => waitUntil(async () => signal.aborted && !(await lock.isLocked()), 2000);
    const business = new Error('business');
    let signal: AbortSignal | undefined;
    const run = async (): Promise<void> => {
      await using handle = await lock.acquire({ leaseMs: 50 });
      signal = handle.signal;
      await ended(handle.signal);
      throw business;
    };
    await expect(run()).rejects.toBe(business);
    expect((signal!.reason as LockLostError).reason).toBe('lease-ended');
    // Without an error in the block, its end does not throw either; an explicit release still does.
    const quiet = async (): Promise<void> => {
      await using handle = await lock.acquire({ leaseMs: 50 });
      await ended(handle.signal);
    };
    await expect(quiet()).resolves.toBeUndefined();
    const handle = await lock.acquire({ leaseMs: 50 });
    await ended(handle.signal);
    await expect(handle.release()).rejects.toThrow('cannot unlock');
  });

  it('expirable permits: one permit expired, the block\'s error reaches the caller and the permits still held are released', async () => {
    const relock = lockClient(env.redis);
    const name = uniqueName('dispose-exp');
    const semaphore = relock.getPermitExpirableSemaphore(name);
    await semaphore.trySetPermits(2);
    const business = new Error('business');
    const run = async (): Promise<void> => {
      await using permits = await semaphore.acquire({ permits: 2 });
      await semaphore.release(permits.ids[0]!);
      throw business;
    };
    await expect(run()).rejects.toBe(business);
    expect(await semaphore.availablePermits()).toBe(2);
  });
});
