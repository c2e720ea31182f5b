/**
 * Set-up shared by the fair and read-write lock tests: a Redis per test file, lock clients (and
 * `family-worker` processes) stopped after each test, and a final check that nothing was left behind.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { useRedis } from './harness.js';
import { activeTimers, keys, waitUntil, Worker, type Redis } from './helpers.js';

export interface FamilyHarness {
  /** A node-redis client on the test file's Redis (valid once `beforeAll` ran). */
  readonly redis: Redis;
  /** A started `family-worker` process with these options (`lockWatchdogTimeout`, `fairLockWaitTimeout`). */
  worker(options?: Record<string, unknown>): Promise<Worker>;
}

/** Registers the hooks of a test file: Redis, clean-up of lock clients and workers after each test. */
export function useFamilyHarness(): FamilyHarness {
  const harness = useRedis({ stopWorker });
  return {
    get redis() {
      return harness.redis;
    },
    async worker(options = {}) {
      const w = new Worker('family-worker', { url: harness.server.url, ...options });
      harness.workers.push(w);
      // Generous: starting a tsx process takes seconds on a loaded 2-core machine.
      await w.next('ready', 60_000);
      return w;
    },
  };
}

/**
 * Adds a last test: once every test before it is done, no key or channel whose name contains
 * `prefix + ':'` is left (locks released or expired, latches deleted, queues emptied), and this process
 * has no more timers than when the file started.
 */
export function leavesNothingBehind(harness: FamilyHarness, prefix: string): void {
  let timersAtStart = 0;
  beforeAll(() => {
    timersAtStart = activeTimers();
  });
  describe('after every test above', () => {
    it('no key, channel subscription or timer is left behind', async () => {
      const left = (): Promise<string[]> => keys(harness.redis, `*${prefix}:*`);
      await waitUntil(async () => (await left()).length === 0, 5000, 20, 'every key to be gone').catch(async (error: unknown) => {
        throw new Error(`${String(error)}: ${(await left()).join(', ')}`);
      });
      expect(await harness.redis.sendCommand(['PUBSUB', 'CHANNELS', `*${prefix}:*`])).toEqual([]);
      await waitUntil(() => activeTimers() <= timersAtStart, 2000, 10, 'timers to be cleared');
    });
  });
}

/**
 * Asks a worker still running to shut its lock client down (which deletes its pending unlock latches)
 * and exit; kills it when it has not exited within 5 s.
 */
async function stopWorker(worker: Worker): Promise<void> {
  if (worker.process.exitCode === null && worker.process.signalCode === null) {
    worker.send({ cmd: 'exit' });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([worker.exited, new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
  }
  await worker.stop();
}
