import { defineObjectScript } from '../redis/object-script.js';
import { replies } from '../redis/script.js';
import { takeReply } from './permits.js';

/**
 * RSemaphore scripts (Redisson's `RedissonSemaphore`), `ObjectScript`s. The key `semaphore` is a string
 * holding the number of free permits (missing = 0). Every script's first command on it is a string
 * command, which Redis refuses with WRONGTYPE (nothing written) on a key of another kind (every other
 * kind keeps a hash or a sorted set there). `permits` = the number of permits. Changes publish the new
 * free count on the channel.
 */

/** Takes `permits` if that many are free: 1, else `{ free, -1 }` (no expiry to wait for); see `takeReply`. */
export const ACQUIRE = defineObjectScript({
  name: 'semaphore.acquire',
  keys: ['semaphore'],
  args: ['permits'],
  replay: true,
  lua: `local free = tonumber(redis.call('get', semaphore) or '0')
if free >= tonumber(permits) then
  redis.call('decrby', semaphore, permits)
  return answer(1)
end
return {free, -1}`,
  parse: takeReply,
});

/** Adds `permits` (negative: removes them; `release` and `addPermits`). Returns the new count. */
export const ADD = defineObjectScript({
  name: 'semaphore.add',
  keys: ['semaphore'],
  args: ['permits'],
  replay: true,
  lua: `local free = redis.call('incrby', semaphore, permits)
if free > 0 then publish(free) end
return answer(free)`,
  parse: replies.integer,
});

/**
 * Adds `permits` only if the semaphore exists (Redisson's `releaseIfExists`): true, else false (nothing
 * written). `GET` first, which Redis refuses with WRONGTYPE on a key of another kind.
 */
export const ADD_IF_EXISTS = defineObjectScript({
  name: 'semaphore.releaseIfExists',
  keys: ['semaphore'],
  args: ['permits'],
  replay: true,
  lua: `if not redis.call('get', semaphore) then return 0 end
local free = redis.call('incrby', semaphore, permits)
if free > 0 then publish(free) end
return answer(1)`,
  parse: replies.flag,
});

/**
 * Sets the count to `permits` if the semaphore does not exist yet: true, else false (`GET` first, which
 * Redis refuses with WRONGTYPE on a key of another kind, where `SETNX` would answer 0). `ttlMs` = time to
 * live of the new key in ms, '' for none.
 */
export const TRY_SET = defineObjectScript({
  name: 'semaphore.trySetPermits',
  keys: ['semaphore'],
  args: ['permits', 'ttlMs'],
  replay: true,
  lua: `if redis.call('get', semaphore) then return 0 end
redis.call('set', semaphore, permits)
if ttlMs ~= '' then redis.call('pexpire', semaphore, ttlMs) end
if tonumber(permits) > 0 then publish(permits) end
return answer(1)`,
  parse: replies.flag,
});

/** Sets the count to 0 and returns what it was (0 when the semaphore does not exist). */
export const DRAIN = defineObjectScript({
  name: 'semaphore.drain',
  keys: ['semaphore'],
  args: [],
  replay: true,
  lua: `local free = redis.call('get', semaphore)
if not free then return 0 end
redis.call('set', semaphore, 0)
return answer(tonumber(free))`,
  parse: replies.integer,
});
