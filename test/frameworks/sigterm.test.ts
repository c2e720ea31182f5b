/**
 * SIGTERM leaves no lock behind (issue 34): a real app of each framework, in a child process
 * (test/support/workers/sigterm-worker.ts) wired for shutdown as its docs say, holds a watchdog lock in a
 * request that is in flight when the process gets SIGTERM. `LockClient.shutdown()` does not release live
 * holds (docs/nestjs.md, express.md, fastify.md: "they end with their lease"), so what keeps the key from
 * being left is the order: the framework stops accepting connections, lets the in-flight request finish
 * (the worker's handler waits until the server stopped listening, then returns and releases its lock),
 * and only then shuts the client down, after which nothing of relock's keeps the process alive. The test
 * checks that the child exits (within `EXIT_DEADLINE_MS`, as the framework exits after SIGTERM), that the
 * request was answered, and that no key of the lock's name is left at once after the exit: the lock's watchdog
 * timeout is 30 s, so a key left behind cannot have expired by then.
 */
import { describe, expect, it } from '@jest/globals';
import { useRedis } from '../support/harness.js';
import { keys, uniqueName, Worker } from '../support/helpers.js';
import { post } from './support.js';

const env = useRedis();

/** How long the child may take to exit after SIGTERM (ms): generous for a loaded 2-core machine. */
const EXIT_DEADLINE_MS = 10_000;

/**
 * How each app exits after SIGTERM (Nest re-raises the signal after its shutdown hooks; the Express app of
 * the docs calls `process.exit(0)`; Fastify's empties its event loop), and its status for a POST.
 */
const CASES = [
  { framework: 'nestjs', exit: { code: null, signal: 'SIGTERM' }, status: 201 },
  { framework: 'express', exit: { code: 0, signal: null }, status: 200 },
  { framework: 'fastify', exit: { code: 0, signal: null }, status: 200 },
] as const;

describe('SIGTERM during a request that holds a lock', () => {
  it.each(CASES)('$framework: the request finishes and releases, the client shuts down, the process exits, no key is left', async ({ framework, exit, status }) => {
    const name = uniqueName(`sigterm:${framework}`);
    const worker = new Worker('sigterm-worker', { url: env.server.url, framework, name });
    env.workers.push(worker);
    const { port } = await worker.next('ready');
    const response = post(`http://127.0.0.1:${String(port)}/hold`).catch((error: Error) => error.message);
    await worker.next('holding');
    expect(await env.redis.exists(name)).toBe(1);

    worker.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), EXIT_DEADLINE_MS)));
    const exited = worker.exited.then(() => ({ code: worker.process.exitCode, signal: worker.process.signalCode }));
    const outcome = await Promise.race([exited, deadline]);
    clearTimeout(timer);
    const left = await keys(env.redis, `*${name}*`);

    expect({ outcome, left, response: await response, stderr: worker.stderr }).toEqual({ outcome: exit, left: [], response: { status, body: { ok: true } }, stderr: '' });
  }, 90_000);
});
