/**
 * Errors of relock's own Redis connections are not lost: node-redis emits `'error'` on a client whose
 * socket closes unexpectedly (and crashes the process when nobody listens), so relock listens on the
 * subscriber it makes (a `duplicate()` of the user's client) and logs each error at debug level with its
 * `source` (src/redis/clients/node-redis.ts). The subscriber's connection is killed by Redis (`CLIENT
 * KILL TYPE pubsub`) once it is subscribed, and the log line is waited for with a deadline.
 */
import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { useRedis } from '../support/harness.js';
import { lockClient, numsub, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis();

interface LogLine {
  msg: string;
  source?: string;
  err?: { type?: string; message?: string };
}

describe('connection errors (node-redis)', () => {
  it("relock's subscriber connection killed by Redis: its error is logged at debug with source 'subscriber', and the waiter is still served", async () => {
    const lines: LogLine[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
    const client = lockClient(env.redis, { logger });
    const name = uniqueName('subscriber-error');
    const holder = client.getLock(name);
    await holder.lock();
    const waiting = client.getLock(name).tryLock(20, 'seconds');
    waiting.catch(() => undefined); // awaited below; a failed check must not leave it rejecting after the test
    // Subscribed: the subscriber is the server's one pub/sub connection (the kill would find none before).
    await waitUntil(async () => (await numsub(env.redis, holder.channel)) === 1, 2000, 5, 'the waiter to subscribe');
    expect(Number(await env.redis.sendCommand(['CLIENT', 'KILL', 'TYPE', 'pubsub']))).toBe(1);
    const errors = (): LogLine[] => lines.filter((l) => l.msg === 'Redis connection error');
    await waitUntil(() => errors().length > 0, 2000, 5, "the subscriber's error in the log");
    expect(errors()[0]).toMatchObject({ source: 'subscriber', err: { type: 'SocketClosedUnexpectedlyError' } });
    expect(errors().every((l) => l.source === 'subscriber')).toBe(true);
    // Served by the unlock message once node-redis has subscribed again.
    await waitUntil(async () => (await numsub(env.redis, holder.channel)) === 1, 2000, 5, 'the resubscription');
    await holder.unlock();
    expect(await waiting).toBe(true);
    await client.getLock(name).forceUnlock();
  });
});
