/**
 * `shutdown()` while Redis is down: a waiter that was parked (subscribed) must not keep it pending until
 * Redis comes back. Its UNSUBSCRIBE can never be answered, so `Channels.close()` waits for it at most the
 * client's `responseTimeout` (newcomer finding 3).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis as IORedis } from 'ioredis';
import { ClientClosedError, createLockClient } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { activeTimers, connect, lockClient, numsub, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis({ server: { controllable: true } });
const RESPONSE_TIMEOUT = 300;
const MARGIN = 700;

let down = false;
async function restart(): Promise<void> {
  if (!down) return;
  down = false;
  await env.server.restart();
  await waitUntil(() => env.redis.isReady, 5000, 10, 'the shared client to reconnect');
}
afterEach(restart);

type Maker = () => Promise<{ redis: object; close: () => Promise<void> }>;
const makers: Record<string, Maker> = {
  'node-redis': async () => {
    const redis = await connect(env.server.url, { socket: { reconnectStrategy: 50 } });
    return {
      redis,
      close: async () => {
        if (redis.isOpen) redis.destroy();
      },
    };
  },
  ioredis: async () => {
    const redis = new IORedis(env.server.port, env.server.host, { retryStrategy: () => 50, lazyConnect: true });
    redis.on('error', () => {});
    await redis.connect();
    // disconnect() arms a `disconnectTimeout` (2 s) timer that only the socket's 'close' clears: on a client
    // between reconnect attempts (its socket closed already) or one closed twice, nothing clears it and it
    // outlives the file (jest: 'did not exit one second after', a force-exited worker; issue 17). So close
    // it connected, once, and wait for its 'end'.
    const close = async (): Promise<void> => {
      if (redis.status === 'end') return;
      await waitUntil(() => redis.status === 'ready', 5000, 10, 'ioredis to reconnect').catch(() => {});
      await new Promise<void>((resolve) => {
        if (redis.status === 'ready') redis.once('end', () => resolve());
        else resolve();
        redis.disconnect();
      });
    };
    return { redis, close };
  },
};

describe('shutdown() while Redis is down', () => {
  it.each(Object.keys(makers))('%s: settles within responseTimeout when a waiter was parked, and leaves no timer', async (kind) => {
    const holder = lockClient(env.redis);
    const b = await makers[kind]!();
    const client = createLockClient({ redis: b.redis, responseTimeout: RESPONSE_TIMEOUT });
    try {
      const name = uniqueName();
      await holder.getLock(name).acquire({ leaseMs: 60_000 });
      const waiting = client.getLock(name).acquire();
      const outcome = expect(waiting).rejects.toBeInstanceOf(ClientClosedError);
      await waitUntil(async () => (await numsub(env.redis, holder.getLock(name).channel)) === 1, 2000, 5, 'the waiter to subscribe');
      const timersBefore = activeTimers();
      down = true;
      await env.server.kill();

      const started = performance.now();
      let settled = false;
      const shutdown = client.shutdown().then(() => (settled = true));
      await waitUntil(() => settled, RESPONSE_TIMEOUT + MARGIN, 5, 'shutdown() to settle');
      await shutdown;
      expect(performance.now() - started).toBeLessThan(RESPONSE_TIMEOUT + MARGIN);
      await outcome;
      // Nothing of relock's left: once Redis is back and the user's client is closed (its reconnect timer
      // gone), the timers are those from before the outage.
      await restart();
      await b.close();
      await waitUntil(() => activeTimers() <= timersBefore, 2000, 10, `timers back to ${timersBefore} (now ${activeTimers()})`);
    } finally {
      await b.close();
    }
  });
});
