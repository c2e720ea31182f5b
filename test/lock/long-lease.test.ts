/**
 * Leases longer than `setTimeout` can wait (2^31 − 1 ms, about 24.8 days): Node fires such a timer after
 * 1 ms, which aborted a 30-day handle's signal at once with 'lease-ended' (newcomer finding 4). Every
 * timer that can be that long goes through `setLongTimeout`, which waits in steps of at most 2^31 − 1 ms.
 */
import { describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../src/index.js';
import { MAX_TIMER_MS, setLongTimeout } from '../../src/time.js';
import { useRedis } from '../support/harness.js';
import { lockClient, sleep, uniqueName, waitUntil } from '../support/helpers.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';

const env = useRedis();
const DAYS_30 = 30 * 24 * 3_600_000;

/**
 * Lets an overflowed timer fire if there is one: Node runs it 1 ms after it was set, so a timer set
 * after it for 30 ms fires later (timers of one process fire in order of their due time).
 */
const pastOverflow = (): Promise<void> => sleep(30);

describe('leases longer than setTimeout can wait', () => {
  it('setLongTimeout: a delay over 2^31 − 1 ms (or Infinity) does not fire early; a short one fires on time', async () => {
    let fired = 0;
    const long = setLongTimeout(() => fired++, MAX_TIMER_MS + 1);
    const never = setLongTimeout(() => fired++, Infinity);
    let shortAt = 0;
    const started = performance.now();
    const short = setLongTimeout(() => (shortAt = performance.now()), 40);
    await pastOverflow();
    expect(fired).toBe(0);
    await waitUntil(() => shortAt > 0, 2000, 2, 'the short timer');
    expect(shortAt - started).toBeGreaterThanOrEqual(39);
    clearTimeout(long);
    clearTimeout(never);
    clearTimeout(short);
  });

  it('a lock handle with a 30-day lease (acquire, and extend) keeps its signal; the key lives 30 days', async () => {
    const client = lockClient(env.redis);
    const lock = client.getLock(uniqueName());
    const handle = await lock.acquire({ leaseTime: 720, unit: 'hours' });
    const extended = await client.getLock(uniqueName()).acquire({ leaseMs: 60_000 });
    await extended.extend(720, 'hours');
    await pastOverflow();
    expect(handle.signal.aborted).toBe(false);
    expect(extended.signal.aborted).toBe(false);
    expect(await env.redis.pTTL(lock.key)).toBeGreaterThan(DAYS_30 - 60_000);
    await handle.release();
    await extended.release();
  });

  it('an expirable permit and a multi-lock with a 30-day lease keep their signals', async () => {
    const client = lockClient(env.redis);
    const semaphore = client.getPermitExpirableSemaphore(uniqueName());
    await semaphore.trySetPermits(1);
    const permit = await semaphore.acquire({ leaseTime: 720, unit: 'hours' });
    const multi = await client.getMultiLock(client.getLock(uniqueName()), client.getLock(uniqueName())).acquire({ leaseTime: 720, unit: 'hours' });
    await pastOverflow();
    expect(permit.signal.aborted).toBe(false);
    expect(multi.signal.aborted).toBe(false);
    await permit.release();
    await multi.release();
    await semaphore.delete();
  });

  it('a short lease still ends on time: the signal aborts with lease-ended before the lease runs out', async () => {
    const client = lockClient(env.redis);
    // The signal aborts a drift margin before the 300 ms lease ends, against a bound of 400 ms from before
    // the acquire: a round that failed while this process's loop or Redis stalled past 100 ms
    // (stallTolerant with probeReplies) is repeated, up to 3 rounds; a lease timer that fires after Redis
    // expired the key fails every round.
    await stallTolerant(async (_, slowReply) => {
      const stop = probeReplies(env.redis, slowReply);
      try {
        const started = performance.now();
        const handle = await client.getLock(uniqueName()).acquire({ leaseMs: 300 });
        await waitUntil(() => handle.signal.aborted, 2000, 2, 'the lease to end');
        const elapsed = performance.now() - started;
        stop();
        expect(elapsed).toBeGreaterThan(200);
        expect(elapsed).toBeLessThan(300 + 100);
        expect(handle.signal.reason).toBeInstanceOf(LockLostError);
        expect((handle.signal.reason as LockLostError).reason).toBe('lease-ended');
      } finally {
        stop();
      }
    }, 100);
  });
});
