/**
 * A Node process that uses relock as an app that forgets `shutdown()` would, and must then exit on its own.
 * argv[2]: JSON `{ url, client: 'node-redis' | 'ioredis' }`. It opens that client, takes a lock while a
 * second acquisition of it waits (contention: relock subscribes and parks the waiter), releases both,
 * closes its own Redis client (node-redis `close()`, ioredis `quit()`) and never calls `shutdown()`.
 * Prints `{ type: 'done' }` after closing its client; then nothing of relock's may keep the process alive.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { createLockClient, type LockClient } from '../../../src/index.js';

const args = JSON.parse(process.argv[2] ?? '{}') as { url: string; client: 'node-redis' | 'ioredis' };
const say = (message: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(message)}\n`);

/** Takes a lock, has a second owner wait for it, releases both. */
async function contend(locks: LockClient): Promise<void> {
  const lock = locks.getLock(`exit:${process.pid}`);
  const held = await lock.acquire();
  const waiting = lock.acquire({ waitMs: 10_000 });
  // Released once the waiter has joined the lock's channel (relock then opens its pub/sub connection).
  while (locks.stats().subscriptions === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  await held.release();
  const next = await waiting;
  await next.release();
}

if (args.client === 'ioredis') {
  const redis = new Redis(args.url);
  redis.on('error', () => {});
  await contend(createLockClient({ redis }));
  await redis.quit();
} else {
  const redis = createClient({ url: args.url });
  redis.on('error', () => {});
  await redis.connect();
  await contend(createLockClient({ redis }));
  await redis.close();
}
say({ type: 'done' });
