import { ObjectScript } from '../redis/object-script.js';

/**
 * RSemaphore scripts (Redisson's `RedissonSemaphore`). KEYS[1] = the semaphore: a string holding the
 * number of free permits (missing = 0); KEYS[2] = the request latch. Every script's first command on
 * KEYS[1] is a string command, which Redis refuses with WRONGTYPE (nothing written) on a key of another
 * kind (every other kind keeps a hash or a sorted set there). ARGV[1..4] as described in
 * `ObjectScript`; ARGV[5] = the number of permits. Changes publish the new free count on the channel.
 */

/** Takes ARGV[5] permits if that many are free: 1, else `{ free, -1 }` (no expiry to wait for). */
export const ACQUIRE = new ObjectScript(
  'semaphore.acquire',
  `local free = tonumber(redis.call('get', KEYS[1]) or '0')
if free >= tonumber(ARGV[5]) then
  redis.call('decrby', KEYS[1], ARGV[5])
  return answer(1)
end
return {free, -1}`,
  true,
);

/** Adds ARGV[5] permits (negative: removes them; `release` and `addPermits`). Returns the new count. */
export const ADD = new ObjectScript(
  'semaphore.add',
  `local free = redis.call('incrby', KEYS[1], ARGV[5])
if free > 0 then publish(free) end
return answer(free)`,
  true,
);

/**
 * Adds ARGV[5] permits only if the semaphore exists (Redisson's `releaseIfExists`): 1, else 0 (nothing
 * written). `GET` first, which Redis refuses with WRONGTYPE on a key of another kind.
 */
export const ADD_IF_EXISTS = new ObjectScript(
  'semaphore.releaseIfExists',
  `if not redis.call('get', KEYS[1]) then return 0 end
local free = redis.call('incrby', KEYS[1], ARGV[5])
if free > 0 then publish(free) end
return answer(1)`,
  true,
);

/**
 * Sets the count to ARGV[5] if the semaphore does not exist yet: 1, else 0 (`GET` first, which Redis
 * refuses with WRONGTYPE on a key of another kind, where `SETNX` would answer 0). ARGV[6] = time to live
 * of the new key in ms, '' for none.
 */
export const TRY_SET = new ObjectScript(
  'semaphore.trySetPermits',
  `if redis.call('get', KEYS[1]) then return 0 end
redis.call('set', KEYS[1], ARGV[5])
if ARGV[6] ~= '' then redis.call('pexpire', KEYS[1], ARGV[6]) end
if tonumber(ARGV[5]) > 0 then publish(ARGV[5]) end
return answer(1)`,
  true,
);

/** Sets the count to 0 and returns what it was (0 when the semaphore does not exist). */
export const DRAIN = new ObjectScript(
  'semaphore.drain',
  `local free = redis.call('get', KEYS[1])
if not free then return 0 end
redis.call('set', KEYS[1], 0)
return answer(tonumber(free))`,
  true,
);
