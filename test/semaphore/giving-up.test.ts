/**
 * A multi-permit waiter that gives up must not strand the permits a release message had budgeted for it.
 * A release message announces the free permits; the local waiters of one channel take them in arrival
 * order, and the first one that needs more than announced keeps the rest back (so that later, smaller
 * waiters do not overtake it). When that waiter then gives up (abort, timeout), the kept budget goes to
 * the waiters behind it (`Channel.remove`): without that, the waiter behind sleeps until its fallback
 * timer (here 20 s) although its permits are free. Both semaphores share that waiting code.
 */
import { describe, expect, it } from '@jest/globals';
import type { Core } from '../../src/core.js';
import { PermitAcquireTimeoutError, type LockClient } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { commandCalls, lockClient, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis();

/** The fallback timer of the waiters (`lockWatchdogTimeout`): far longer than any bound below. */
const FALLBACK_MS = 30_000;
/** How soon after the first waiter gave up the one behind it must hold its permits. */
const PROMPT_MS = 1000;

interface Kind {
  /** A semaphore named `name` with no permit free, and a way to free 2 (one release message saying 2). */
  make(client: LockClient, name: string): Promise<{ channel: string; acquire(permits: number, options: { waitMs?: number; signal?: AbortSignal }): Promise<unknown>; freeTwo(): Promise<void> }>;
}

const KINDS: Array<[string, Kind]> = [
  [
    'RSemaphore',
    {
      async make(client, name) {
        const semaphore = client.getSemaphore(name);
        await semaphore.trySetPermits(0);
        await semaphore.tryAcquire(); // the acquire script is loaded: each attempt is one EVALSHA
        return { channel: semaphore.channel, acquire: (permits, options) => semaphore.acquire({ permits, ...options }), freeTwo: () => semaphore.release(2) };
      },
    },
  ],
  [
    'RPermitExpirableSemaphore',
    {
      async make(client, name) {
        const semaphore = client.getPermitExpirableSemaphore(name);
        await semaphore.setPermits(2);
        const held = await semaphore.acquire({ permits: 2, leaseMs: 60_000 });
        return { channel: semaphore.channel, acquire: (permits, options) => semaphore.acquire({ permits, leaseMs: 60_000, ...options }), freeTwo: () => held.release() };
      },
    },
  ],
];

/** Resolves to 'settled' when `promise` fulfils within `ms`, else to 'late' (a rejection fails the test). */
function within(promise: Promise<unknown>, ms: number): Promise<'settled' | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  return Promise.race([promise.then(() => 'settled' as const), late]).finally(() => clearTimeout(timer));
}

describe.each(KINDS)('%s: a multi-permit waiter that gives up passes on the permits a release announced (issue 28)', (_, kind) => {
  it.each(['abort', 'timeout'] as const)('by %s: the waiter behind it gets its permits within milliseconds, not at its fallback timer', async (how) => {
    const client = lockClient(env.redis, { lockWatchdogTimeout: FALLBACK_MS });
    const semaphore = await kind.make(client, uniqueName());
    const evalsha = () => commandCalls(env.redis, 'evalsha');

    // First in line: a waiter for 3, which the release of 2 cannot satisfy.
    const controller = new AbortController();
    const calls = await evalsha();
    const first = semaphore.acquire(3, how === 'abort' ? { signal: controller.signal } : { waitMs: 2000 }).catch((error: unknown) => error);
    await waitUntil(async () => (await evalsha()) >= calls + 2, 5000, 5, 'the first waiter to try again after subscribing (then it parks)');
    // Behind it: a waiter for 2 (the channel is live: it parks after one attempt).
    const second = semaphore.acquire(2, { waitMs: 20_000 });
    await waitUntil(async () => (await evalsha()) >= calls + 3, 5000, 5, 'the second waiter to make its attempt (then it parks)');

    await semaphore.freeTwo();
    const channel = (client as unknown as { core: Core }).core.channels.live(semaphore.channel)!;
    await waitUntil(() => channel.heldBack === 2, 5000, 1, 'the release message, held back for the first waiter');

    if (how === 'abort') controller.abort(new Error('gave up'));
    const gaveUp = await first;
    expect(gaveUp).toEqual(how === 'abort' ? new Error('gave up') : expect.any(PermitAcquireTimeoutError));
    expect(await within(second, PROMPT_MS)).toBe('settled');
  });
});
