import { acquireSource } from '../lock/scripts.js';
import { Script } from '../redis/script.js';

/**
 * Fenced acquire (Redisson's `RedissonFencedLock`): the RLock acquire plus `INCR` of the fencing counter
 * in the same script, on every acquisition including reentrant ones. KEYS[1] = lock, KEYS[2] = fencing
 * counter (no TTL); ARGV as `acquireSource` (ARGV[4] = `fenced-lock`). Returns `{1, token}` when
 * acquired (the token as a string, for 64-bit precision; a retry after a lost reply gets the token its
 * attempt took), `'lost'` when the client's hold had ended (see `holdSource`), else `{0, PTTL of the
 * holder}`; a WRONGTYPE error when the name belongs to another kind.
 */
export const FENCED_ACQUIRE = new Script(
  'fencedLock.acquire',
  acquireSource({
    lostReply: "return {1, tostring(redis.call('get', KEYS[2]) or '0')}",
    granted: "return {1, tostring(redis.call('incr', KEYS[2]))}",
    busy: "return {0, redis.call('pttl', KEYS[1])}",
  }),
);
