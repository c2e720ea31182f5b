/**
 * The unlock guard (issue 12): an unlock writes no key but the lock's own on the happy path, and a
 * retried unlock still replays the first attempt's answer (the hold-count guard, or the latch of a nil
 * answer). Runs for every hash lock and both sides of the read-write lock.
 */
import { describe, expect, it } from '@jest/globals';
import pino from 'pino';
import { IllegalMonitorStateError, type LockClient, type RLock } from '../../src/index.js';
import { useStandaloneTopology } from '../shared/topology.js';
import { uniqueName, waitUntil } from '../support/helpers.js';
import { VARIANTS } from '../contract/variants.js';

const topology = useStandaloneTopology();

/** Calls of `command` so far (INFO commandstats), scripts' inner calls included. */
async function calls(command: string): Promise<number> {
  const info = String(await topology().command('any', ['INFO', 'commandstats']));
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}

/** The keys of `key`'s hash tag left in Redis, but a fencing counter (kept on purpose). */
async function left(key: string): Promise<string[]> {
  return (await topology().keys(`*${key.slice(key.indexOf('{'))}*`, key)).filter((k) => !k.includes('relock:fence:'));
}

/** Takes `lock` with a 100 ms lease in the current context and waits until Redis expired it (the client still counts it). */
async function expiredHold(lock: RLock): Promise<void> {
  expect(await lock.tryLock(0, 100, 'ms')).toBe(true);
  await waitUntil(async () => (await topology().redis.exists(lock.key)) === 0, 2000, 10, 'the lease to end');
}

/**
 * Takes `lock` in the current context with a client hold count Redis disagrees with (stale), and resolves
 * to the hold count Redis is left with once the client's holds are released. The hash locks check the count
 * the client knows at acquire time (an ended hold is forgotten), so theirs goes stale the other way: one hold
 * more of the same owner id than the client knows, as a process sharing its `identifier` would take. The
 * read-write lock's acquire does not check it (CHANGELOG), so its count goes stale by a reentrant lease ending.
 */
async function staleHold(kind: string, lock: RLock): Promise<number> {
  const { redis } = topology();
  if (kind === 'read-write-lock') {
    await expiredHold(lock); // the client still counts the expired hold: it knows 2 holds, Redis has 1
    expect(await lock.tryLock(0, 10_000, 'ms')).toBe(true);
    return 0;
  }
  expect(await lock.tryLock(0, 10_000, 'ms')).toBe(true);
  const [owner, count] = Object.entries(await redis.hGetAll(lock.key)).find(([field]) => field.includes(':'))!;
  expect(count).toBe('1');
  await redis.hSet(lock.key, owner, '2'); // Redis has 2 holds, the client knows 1
  return 1;
}

/** The unlock latches of `key`'s hash tag left in Redis. */
async function latches(key: string): Promise<string[]> {
  return (await left(key)).filter((k) => k.includes('relock:unlock:'));
}

for (const v of VARIANTS) {
  describe(`${v.name} unlock guard`, () => {
    const newLock = (c: LockClient): RLock => v.of(c, `guard:{${uniqueName()}}`);
    // A stale hold count is a reentrant lock's (a hash of counts); the non-reentrant lock has none.
    const reentrantOnly = v.plain ? it.skip : it;

    it('an unlock sends one request and writes no key besides the lock (no latch SET, no UNLINK)', async () => {
      const { client, redis } = topology();
      const c = client();
      const lock = newLock(c);
      await lock.lock();
      const before = { set: await calls('set'), unlink: await calls('unlink'), evalsha: await calls('evalsha') };
      await lock.unlock();
      await c.shutdown(); // sends the pending latch deletions, if any
      expect(await calls('set')).toBe(before.set);
      expect(await calls('unlink')).toBe(before.unlink);
      expect(await calls('evalsha')).toBe(before.evalsha + 1);
      expect(await redis.exists(lock.key)).toBe(0);
    });

    it('a retried unlock of the last hold after a lost reply succeeds once, is logged released once, and leaves no key', async () => {
      const lines: Array<Record<string, unknown>> = [];
      const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
      const { client: c, loseReplyTo } = await topology().lossyClient({ logger });
      const { redis } = topology();
      const lock = newLock(c);
      await c.runInContext(async () => {
        await lock.lock();
        let lost = false;
        void loseReplyTo(lock.key).then(() => (lost = true));
        await lock.unlock();
        expect(lost).toBe(true);
        expect(await lock.getHoldCount()).toBe(0);
      });
      expect(await redis.exists(lock.key)).toBe(0);
      // The retry's answer says the lock was deleted (1), not that holds remain (0): the release is logged.
      expect(lines.filter((line) => line.msg === 'lock released').map((line) => line.lock)).toEqual([lock.name]);
      await waitUntil(async () => (await left(lock.key)).length === 0, 2000, 20, 'no latch left');
    });

    it('a retried unlock whose first attempt found no hold (lease over) still throws IllegalMonitorStateError', async () => {
      const { client: c, loseReplyTo } = await topology().lossyClient();
      const lock = newLock(c);
      await c.runInContext(async () => {
        await expiredHold(lock);
        let lost = false;
        void loseReplyTo(lock.key).then(() => (lost = true));
        await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
        expect(lost).toBe(true);
      });
      await waitUntil(async () => (await left(lock.key)).length === 0, 2000, 20, 'the nil latch deleted');
    });

    it('an unlock by an owner that holds nothing throws, and the latch of its nil answer is deleted', async () => {
      const { client, redis } = topology();
      const holder = newLock(client());
      await holder.lock();
      const other = v.of(client(), holder.name);
      await expect(other.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
      // Deleted in the next latch batch (50 ms), far sooner than its TTL.
      await waitUntil(async () => (await left(holder.key)).every((k) => !k.includes('relock:unlock:')), 1000, 10, 'the nil latch deleted');
      expect(await redis.exists(holder.key)).toBe(1);
      await holder.unlock();
    });

    reentrantOnly("a retried unlock replays its answer when the client's hold count was stale", async () => {
      const { client: c, loseReplyTo } = await topology().lossyClient();
      const { redis } = topology();
      const lock = newLock(c);
      let remaining = 0;
      await c.runInContext(async () => {
        remaining = await staleHold(v.kind, lock);
        let lost = false;
        void loseReplyTo(lock.key).then(() => (lost = true));
        await lock.unlock();
        expect(lost).toBe(true);
      });
      // Released once: a retry that released again would have taken the hold the client did not know of.
      expect(await redis.exists(lock.key)).toBe(remaining > 0 ? 1 : 0);
      await waitUntil(async () => (await latches(lock.key)).length === 0, 2000, 20, 'the latch deleted');
      await redis.del(lock.key);
    });

    reentrantOnly('an unlock answered while the hold count was stale deletes the latch it stored', async () => {
      const { client, redis } = topology();
      const c = client();
      const lock = newLock(c);
      let remaining = 0;
      await c.runInContext(async () => {
        remaining = await staleHold(v.kind, lock);
        await lock.unlock();
      });
      expect(await redis.exists(lock.key)).toBe(remaining > 0 ? 1 : 0);
      // Deleted in the next latch batch (50 ms), far sooner than its TTL.
      await waitUntil(async () => (await latches(lock.key)).length === 0, 1000, 10, 'the latch deleted');
      await redis.del(lock.key);
    });
  });
}
