/**
 * A process that forgets `shutdown()` but closes its own Redis client exits on its own: nothing of
 * relock's (its timers, its own pub/sub connection) keeps the event loop alive once a waiter has waited
 * (issue 36). Each case runs test/support/workers/exit-worker.ts in a child process: it takes a lock while
 * a second acquisition waits for it, releases both, closes its client and prints `done`; it must then exit
 * within `EXIT_DEADLINE_MS`. Before the fix, the node-redis case never exited: relock's subscriber (a
 * `duplicate()` of the user's client) stayed open after the user's `close()`.
 */
import { describe, expect, it } from '@jest/globals';
import { useRedis } from '../support/harness.js';
import { Worker } from '../support/helpers.js';

const env = useRedis();

/** How long after closing its client the child may take to exit (ms): generous for a loaded machine. */
const EXIT_DEADLINE_MS = 5000;

describe('a process that forgets shutdown() exits once its own client is closed', () => {
  it.each(['node-redis', 'ioredis'] as const)('%s, after a waiter waited', async (client) => {
    const worker = new Worker('exit-worker', { url: env.server.url, client });
    env.workers.push(worker);
    await worker.next('done');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), EXIT_DEADLINE_MS)));
    const outcome = await Promise.race([worker.exited, deadline]);
    clearTimeout(timer);
    expect({ outcome, stderr: worker.stderr }).toEqual({ outcome: 0, stderr: '' });
  }, 90_000);
});
