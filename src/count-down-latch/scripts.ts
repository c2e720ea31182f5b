import { WRONG_KIND } from '../kinds.js';
import { defineObjectScript } from '../redis/object-script.js';
import { defineScript, replies } from '../redis/script.js';

/**
 * RCountDownLatch scripts (Redisson's `RedissonCountDownLatch`), `ObjectScript`s but the read. The key
 * `countdown` is the latch: a hash with `count` (the count; a missing key = 0: open) and `kind` =
 * `count-down-latch` (a name serves one kind of object at a time: a key of another kind fails every
 * script with WRONGTYPE, nothing written).
 */

/**
 * Lua: `count()`, the latch's count (0 when the key does not exist), or the WRONGTYPE error reply when
 * the key belongs to another kind (`HMGET`, which Redis refuses itself on a key that is no hash).
 */
const COUNT = `${WRONG_KIND}local function count()
  local marks = redis.call('hmget', countdown, 'kind', 'count')
  if marks[1] == 'count-down-latch' then return tonumber(marks[2]) end
  if marks[1] or redis.call('exists', countdown) == 1 then return wrongKind(marks[1]) end
  return 0
end
`;

/** Sets the count to `count` if the latch does not exist (is open): true, else false. */
export const TRY_SET_COUNT = defineObjectScript({
  name: 'latch.trySetCount',
  keys: ['countdown'],
  args: ['initial'],
  replay: true,
  lua: `${COUNT}local current = count()
if type(current) == 'table' then return current end
if current > 0 then return 0 end
redis.call('hset', countdown, 'kind', 'count-down-latch', 'count', initial)
return answer(1)`,
  parse: replies.flag,
});

/**
 * Counts down by one. At zero the key is deleted and `0` is published (every awaiter wakes). Returns
 * the new count (0 when the latch was already open: nothing changes then).
 */
export const COUNT_DOWN = defineObjectScript({
  name: 'latch.countDown',
  keys: ['countdown'],
  args: [],
  replay: true,
  lua: `${COUNT}local current = count()
if type(current) == 'table' then return current end
if current == 0 then return 0 end
local left = redis.call('hincrby', countdown, 'count', -1)
if left <= 0 then
  redis.call('del', countdown)
  publish('0')
  left = 0
end
return answer(left)`,
  parse: replies.integer,
});

/** The count (0: open), or a WRONGTYPE error when the key belongs to another kind. Reads only. */
export const READ_COUNT = defineScript({ name: 'latch.count', keys: ['countdown'], args: [], readOnly: true, lua: `${COUNT}return count()`, parse: replies.integer });
