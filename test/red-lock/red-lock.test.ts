import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { IllegalMonitorStateError, InvalidArgumentError, LockLostError, RedisUnavailableError, type LockClient, type LockHandle, type RRedLock } from '../../src/index.js';
import { nodeTimeout } from '../../src/red-lock/red-lock.js';
import { closeAll, commandCalls, connect, lockClient, sleep, uniqueName, waitUntil, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';

let servers: RedisServer[];
let redis: Redis[];
const stopped = new Set<number>();

beforeAll(async () => {
  servers = await Promise.all([0, 1, 2].map(() => startRedis({ controllable: true })));
  redis = await Promise.all(servers.map((s) => connect(s.url)));
});
afterEach(async () => {
  await closeAll();
  for (const i of stopped) {
    servers[i]!.resume();
    await servers[i]!.restart();
  }
  stopped.clear();
  await Promise.all(redis.map((r) => waitUntil(() => r.isReady, 5000, 10, 'the test connection to reconnect')));
});
afterAll(async () => {
  await Promise.all(redis.map((r) => r.close()));
  await Promise.all(servers.map((s) => s.stop()));
});

/** One lock client per master, with a short response timeout so that shutdown does not wait on dead nodes. */
function clients(options: { lockWatchdogTimeout?: number } = {}): LockClient[] {
  return redis.map((r) => lockClient(r, { responseTimeout: 500, ...options }));
}
function redLockOf(nodes: LockClient[], name: string): RRedLock {
  return nodes[0]!.getRedLock(...nodes.map((c) => c.getLock(name)));
}
async function kill(i: number): Promise<void> {
  stopped.add(i);
  await servers[i]!.kill();
}
/** 1 for each node whose client appears among the owners in `owner` (a handle's comma-separated owner ids). */
const nodesOf = (owner: string, nodes: LockClient[]): number[] => nodes.map((c) => (owner.split(',').some((o) => o.startsWith(`${c.id}:`)) ? 1 : 0));
/** Whether `name` exists on each server (null for a stopped one: its queued command would wait 5 s). */
const heldOn = (name: string): Promise<Array<number | null>> => Promise.all(redis.map(async (r, i) => (stopped.has(i) ? null : Number(await r.exists(name)))));
/**
 * Waits (at most 3 s: a cut attempt's undo waits up to the 500 ms response timeout, its release up to 1 s)
 * until `heldOn(name)` equals `expected()`, and returns it. A node cut from a round after the grace may
 * still grant a moment later; its straggler releases that grant in the background (or its lock undoes
 * it), so right after `acquire()` such a node can hold the key for a few ms (CI, Node 22, once). Without
 * that release the key stays for the whole lease and this times out.
 */
async function settledHeldOn(name: string, expected: () => Array<number | null>): Promise<Array<number | null>> {
  let last: Array<number | null> = [];
  try {
    await waitUntil(async () => {
      last = await heldOn(name);
      return JSON.stringify(last) === JSON.stringify(expected());
    }, 3000, 10, `the nodes holding ${name} to be ${JSON.stringify(expected())}`);
    return last;
  } catch (error) {
    throw new Error(`${(error as Error).message}; held on: ${JSON.stringify(last)}`);
  }
}

describe('RedLock', () => {
  it('takes a quorum of independent masters, reports its validity, and unlock releases every node', async () => {
    const nodes = clients();
    const name = uniqueName();
    const redLock = redLockOf(nodes, name);
    expect(redLock.quorum).toBe(2);
    // A 60 s lease: its drift margin (602 ms) is far longer than the acquisition can take even on a loaded
    // machine, so a validity without the margin could not pass for one with it.
    const lease = 60_000;
    const started = performance.now();
    const handle = await redLock.acquire({ waitMs: 1000, leaseMs: lease });
    const took = performance.now() - started;
    // nodes answering about as fast as the quorum are kept too (on an idle machine: all three)
    expect(handle.owner.split(',').length).toBeGreaterThanOrEqual(2);
    await settledHeldOn(name, () => nodesOf(handle.owner, nodes));
    const drift = 0.01 * lease + 2;
    expect(handle.leaseTime!).toBeLessThanOrEqual(lease - drift);
    expect(handle.leaseTime!).toBeGreaterThanOrEqual(lease - drift - took - 1);
    await handle.release();
    expect(await heldOn(name)).toEqual([0, 0, 0]);

    expect(await redLock.tryLock(1, 'seconds')).toBe(true);
    // every node that holds it is renewed by its client's watchdog (all three on an idle machine; a node
    // cut from the round holds it only until its straggler's release, and is not renewed)
    const held = await settledHeldOn(name, () => nodes.map((c) => c.stats().watchdogHolds));
    expect(held.filter(Boolean).length).toBeGreaterThanOrEqual(2);
    expect(nodes.map((c) => c.stats().watchdogHolds)).toEqual(held);
    await redLock.unlock();
    expect(await heldOn(name)).toEqual([0, 0, 0]);
    expect(nodes.map((c) => c.stats().watchdogHolds)).toEqual([0, 0, 0]);
    await expect(redLock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
  });

  it('works with one of three masters stopped, without waiting for the client\'s response timeout', async () => {
    const nodes = clients();
    await kill(2);
    // The two live nodes decide within ms (the quorum at once, a grace of 10 ms), against a bound of the
    // 1,000 ms node timeout: a round that failed while this process's loop or a live server stalled past
    // 400 ms (stallTolerant; probeReplies PINGs the first master) is repeated, up to 3 rounds, on a fresh
    // name, the hold released; a round that waits for the dead node ends at the node timeout, every round.
    const { name, redLock } = await stallTolerant(async (_, slowReply) => {
      const name = uniqueName();
      const redLock = redLockOf(nodes, name);
      let handle: LockHandle | undefined;
      const stop = probeReplies(redis[0]!, slowReply);
      try {
        const started = performance.now();
        handle = await redLock.acquire({ waitMs: 2000, leaseMs: 10_000 });
        const took = performance.now() - started;
        stop();
        expect(took).toBeLessThan(nodeTimeout(10_000)); // decided by the two live nodes, not by the dead one
        expect((await heldOn(name)).slice(0, 2)).toEqual([1, 1]);
        expect(handle.leaseTime!).toBeGreaterThanOrEqual(10_000 - 102 - took - 2);
        const releasing = performance.now();
        const releasingHandle = handle;
        handle = undefined;
        await releasingHandle.release();
        expect(performance.now() - releasing).toBeLessThan(1500);
        expect((await heldOn(name)).slice(0, 2)).toEqual([0, 0]);
        return { name, redLock };
      } finally {
        stop();
        await handle?.release().catch(() => {});
      }
    }, 400);

    await redLock.lock();
    expect((await heldOn(name)).slice(0, 2)).toEqual([1, 1]);
    await redLock.unlock();
    expect((await heldOn(name)).slice(0, 2)).toEqual([0, 0]);
  });

  it('fails with two of three masters stopped, holding nothing on the one left', async () => {
    const nodes = clients();
    const name = uniqueName();
    await kill(1);
    await kill(2);
    const redLock = redLockOf(nodes, name);
    const before = await commandCalls(redis[0]!, 'evalsha');
    const error = await redLock.tryLock(500, 2000, 'ms').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as Error).message).toContain('1 of 3 nodes answered, 2 needed');
    expect(await redis[0]!.exists(name)).toBe(0);
    const calls = (await commandCalls(redis[0]!, 'evalsha')) - before;
    expect(calls % 2).toBe(0); // every grant on the live node was released
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(nodes[0]!.stats().watchdogHolds).toBe(0);
    await expect(redLock.acquire({ waitMs: 0 })).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(await redis[0]!.exists(name)).toBe(0);
  });

  it('subtracts the elapsed time from the validity, and fails (releasing every node) when it is not positive', async () => {
    const nodes = clients();
    const name = uniqueName();
    const redLock = redLockOf(nodes, name);
    const lease = 10_000;
    const drift = 0.01 * lease + 2;
    // Two nodes paused: the quorum comes only when one of them is resumed, about 200 ms into the round
    // (nodeTimeout(10 s) = 1 s, so the round is still waiting then).
    servers[1]!.pause();
    servers[2]!.pause();
    let slow;
    let resumedAfter = 0;
    let doneAfter = 0;
    try {
      const started = performance.now();
      const acquiring = redLock.acquire({ leaseMs: lease, waitMs: 0 });
      await sleep(200);
      servers[1]!.resume();
      resumedAfter = performance.now() - started;
      slow = await acquiring;
      doneAfter = performance.now() - started;
    } finally {
      servers[1]!.resume();
      servers[2]!.resume();
    }
    // the validity left is the lease minus drift minus the time the round took (from before the resume
    // to the handle): at most lease − drift − resumedAfter, at least lease − drift − doneAfter
    expect(slow.leaseTime!).toBeLessThanOrEqual(lease - drift - resumedAfter + 2);
    expect(slow.leaseTime!).toBeGreaterThanOrEqual(lease - drift - doneAfter - 2);
    expect(resumedAfter).toBeGreaterThanOrEqual(195);
    await slow.release();
    await waitUntil(async () => (await heldOn(name)).every((h) => h === 0), 3000, 10, 'every node to be released');

    const before = await Promise.all(redis.map((r) => commandCalls(r, 'evalsha')));
    expect(await redLock.tryLock(0, 2, 'ms')).toBe(false); // drift (2.02 ms) exceeds the lease
    // acquire + release on every node (a node that answered after the round was decided is undone by its lock)
    const calls = async (): Promise<number[]> => (await Promise.all(redis.map((r) => commandCalls(r, 'evalsha')))).map((n, i) => n - before[i]!);
    await waitUntil(async () => (await calls()).every((n) => n === 2), 2000, 10, 'an acquire and a release on every node');
    expect(await heldOn(name)).toEqual([0, 0, 0]);
  });

  it('a busy quorum makes tryLock fail without holding anything anywhere', async () => {
    const holder = redLockOf(clients(), uniqueName());
    const name = holder.locks[0]!.name;
    await holder.tryLock(0, 5, 'seconds');
    const otherClients = clients();
    const other = redLockOf(otherClients, name);
    const started = performance.now();
    expect(await other.tryLock(300, 5000, 'ms')).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(295);
    const otherOwners = async (): Promise<string[]> =>
      (await Promise.all(redis.map((r) => r.hKeys(name)))).flat().filter((o) => otherClients.some((c) => o.startsWith(`${c.id}:`)));
    await waitUntil(async () => (await otherOwners()).length === 0, 2000, 10, 'nothing of the loser to be left');
    await expect(other.acquire({ waitMs: 100 })).rejects.toThrow(/could not acquire/);
    await holder.unlock();
    expect(await other.tryLock(1, 'seconds')).toBe(true);
    await other.unlock();
  });

  it('the handle\'s signal aborts when the validity ends, or (watchdog) when fewer than a quorum remain held', async () => {
    // The signal aborts at the validity's end, against a bound 200 ms later: a round that failed while this
    // process's event loop stalled past 150 ms (stallTolerant; the timed part waits on this process's
    // timer, no Redis reply) is repeated, up to 3 rounds, on a fresh name; a validity timer that fires
    // late fails every round.
    await stallTolerant(async () => {
      const name = uniqueName();
      const leased = await redLockOf(clients(), name).acquire({ leaseMs: 300 });
      try {
        const started = performance.now();
        await waitUntil(() => leased.signal.aborted, 2000, 5, 'the validity to end');
        expect(performance.now() - started).toBeLessThan(leased.leaseTime! + 200);
        expect((leased.signal.reason as LockLostError).reason).toBe('lease-ended');
      } finally {
        await leased.release();
      }
    }, 150);

    const nodes = clients({ lockWatchdogTimeout: 600 });
    const handle = await redLockOf(nodes, uniqueName()).acquire();
    const held = nodesOf(handle.owner, nodes).flatMap((h, i) => (h ? [i] : []));
    // kill held nodes one by one: the signal aborts exactly when fewer than 2 remain
    while (held.length > 2) {
      await kill(held.pop()!);
      await sleep(1000);
      expect(handle.signal.aborted).toBe(false);
    }
    await kill(held.pop()!);
    await waitUntil(() => handle.signal.aborted, 3000, 10, 'the loss of the quorum');
    expect(handle.signal.reason).toBeInstanceOf(LockLostError);
    await handle.release();
  });

  it('refuses members that share a LockClient, and unlock() ignores a dead node', async () => {
    const nodes = clients();
    expect(() => nodes[0]!.getRedLock(nodes[0]!.getLock('a'), nodes[0]!.getLock('b'))).toThrow(InvalidArgumentError);
    expect(() => nodes[0]!.getRedLock()).toThrow(InvalidArgumentError);
    // The unlock gives the dead node RELEASE_WAIT_MS (1,000 ms), against a bound of 1,500 ms: a round that
    // failed while this process's loop or a live server stalled past 400 ms (stallTolerant; probeReplies
    // PINGs the second master) is repeated, up to 3 rounds, on a fresh name, the dead master restarted; an
    // unlock that waits for the dead node's response fails every round.
    await stallTolerant(async (_, slowReply) => {
      const name = uniqueName();
      const redLock = redLockOf(nodes, name);
      await redLock.lock(5, 'seconds');
      await kill(0);
      const stop = probeReplies(redis[1]!, slowReply);
      try {
        const started = performance.now();
        await redLock.unlock();
        const took = performance.now() - started;
        stop();
        expect(took).toBeLessThan(1500);
        expect((await heldOn(name)).slice(1)).toEqual([0, 0]);
      } finally {
        stop();
        stopped.delete(0);
        await servers[0]!.restart();
        await waitUntil(() => redis[0]!.isReady, 5000, 10, 'the test connection to reconnect');
        await Promise.all(redis.slice(1).map((r) => r.del(name)));
      }
    }, 400);
  });
});
