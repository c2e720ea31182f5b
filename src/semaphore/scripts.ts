import { defineObjectScript } from '../redis/object-script.js';
import { replies } from '../redis/script.js';
import { takeReply } from './permits.js';

/**
 * RSemaphore scripts (Redisson's `RedissonSemaphore`), `ObjectScript`s. The key `semaphore` is a string
 * holding the number of free permits (missing = 0). Every script first reads it with `permitCount()`: a
 * `GET`, which Redis refuses with WRONGTYPE (nothing written) on a key of another kind (every other kind
 * keeps a hash or a sorted set there), and a string that is not an integer (data relock did not write)
 * gets the error reply `WRONGTYPE relock:string` (a `WrongTypeError`), never a Lua error or NaN.
 * `permits` = the number of permits. Changes publish the new free count on the channel.
 */

/**
 * Lua: `permitCount()`, the free permits and whether the key exists (`0, false` when missing), or the
 * error reply of a string that is not an integer of at most 20 characters (return it when it is a table).
 */
const COUNT = `local function permitCount()
  local value = redis.call('get', semaphore)
  if not value then return 0, false end
  if #value > 20 or not string.match(value, '^%-?%d+$') then return redis.error_reply('WRONGTYPE relock:string') end
  return tonumber(value), true
end
`;

/** Takes `permits` if that many are free: 1, else `{ free, -1, exists }` (no expiry to wait for; `exists` 0 when the permits were never set); see `takeReply`. */
export const ACQUIRE = defineObjectScript({
  name: 'semaphore.acquire',
  keys: ['semaphore'],
  args: ['permits'],
  replay: true,
  lua: `${COUNT}local free, exists = permitCount()
if type(free) == 'table' then return free end
if free >= tonumber(permits) then
  redis.call('decrby', semaphore, permits)
  return answer(1)
end
return {free, -1, exists and 1 or 0}`,
  parse: takeReply,
});

/** Adds `permits` (negative: removes them; `release` and `addPermits`). Returns the new count. */
export const ADD = defineObjectScript({
  name: 'semaphore.add',
  keys: ['semaphore'],
  args: ['permits'],
  replay: true,
  lua: `${COUNT}local current = permitCount()
if type(current) == 'table' then return current end
local free = redis.call('incrby', semaphore, permits)
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
  lua: `${COUNT}local current, exists = permitCount()
if type(current) == 'table' then return current end
if not exists then return 0 end
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
  lua: `${COUNT}local current, exists = permitCount()
if type(current) == 'table' then return current end
if exists then return 0 end
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
  lua: `${COUNT}local free, exists = permitCount()
if type(free) == 'table' then return free end
if not exists then return 0 end
redis.call('set', semaphore, 0)
return answer(free)`,
  parse: replies.integer,
});
