/**
 * C7 hygiene: what a run left behind once every surviving worker stopped cleanly. Lock keys must be gone
 * within a lease (a killed holder's key expires; an orphan too), nothing may be left without a TTL except
 * fencing counters and semaphore permit counts (configuration, kept on purpose), no channel may keep a subscriber, relock must hold no watchdog
 * entry or subscription, and a shut-down client must leave no timer behind.
 */
import type { createClient } from 'redis';

type Redis = ReturnType<typeof createClient>;

export interface HygieneFacts {
  /** Lock keys still there a lease after the workers stopped. */
  leftoverLockKeys: string[];
  /** Keys without a TTL other than those kept on purpose (`KEPT`). */
  keysWithoutTtl: string[];
  /** Unlock latches left with a TTL (by killed workers; they expire by themselves). */
  latchesLeft: number;
  /** Subscribers of relock channels left 5 s after the workers became idle (`PUBSUB NUMSUB`). */
  subscribers: number;
  /** How long the subscribers took to go (0 when there were none). */
  subscriberDrainMs: number;
  /** Watchdog entries and subscriptions relock reported while idle, summed over workers. */
  relockHolds: number;
  relockSubscriptions: number;
  /** Timers left 2.5 s after `shutdown()`, summed over workers. */
  timersLeft: number;
  /** Timers still there right after `shutdown()` that went away within 2.5 s (node-redis reconnect backoff). */
  transientTimers: number;
  /** Workers that did not stop or shut down in time. */
  stuckWorkers: string[];
}

/** Prefixes of keys kept without a TTL on purpose: fencing counters, election terms, the number of permits of a semaphore. */
const KEPT = ['relock:fence:', 'relock:term:', 'relock:permits:'];

export const leakCount = (f: HygieneFacts): number =>
  f.leftoverLockKeys.length + f.keysWithoutTtl.length + f.subscribers + f.relockHolds + f.relockSubscriptions + f.timersLeft + f.stuckWorkers.length;

/** Subscribers of relock's channels (`PUBSUB CHANNELS relock:*` then `PUBSUB NUMSUB`). */
export async function relockSubscribers(redis: Redis): Promise<number> {
  const channels = await redis.sendCommand<string[]>(['PUBSUB', 'CHANNELS', 'relock:*']);
  if (channels.length === 0) return 0;
  const reply = await redis.sendCommand<Array<string | number>>(['PUBSUB', 'NUMSUB', ...channels]);
  let total = 0;
  for (let i = 1; i < reply.length; i += 2) total += Number(reply[i]);
  return total;
}

/**
 * Waits up to `waitMs` for the keys matching `lockPattern` to disappear, then classifies what is left.
 * Returns the key facts (the worker-reported ones are filled in by the caller).
 */
export async function keyFacts(redis: Redis, lockPattern: string, waitMs: number): Promise<Pick<HygieneFacts, 'leftoverLockKeys' | 'keysWithoutTtl' | 'latchesLeft'>> {
  const deadline = performance.now() + waitMs;
  let locks = await scan(redis, lockPattern);
  while (locks.length > 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    locks = await scan(redis, lockPattern);
  }
  const withoutTtl: string[] = [];
  let latches = 0;
  for (const key of (await scan(redis, '*')).slice(0, 1000)) {
    if (KEPT.some((prefix) => key.startsWith(prefix))) continue;
    const ttl = await redis.pTTL(key);
    if (ttl === -1) withoutTtl.push(key);
    else if (key.startsWith('relock:unlock:') && ttl > 0) latches++;
  }
  return { leftoverLockKeys: locks, keysWithoutTtl: withoutTtl, latchesLeft: latches };
}

async function scan(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  for await (const batch of redis.scanIterator({ MATCH: pattern, COUNT: 1000 })) found.push(...(Array.isArray(batch) ? batch : [batch]));
  return found;
}
