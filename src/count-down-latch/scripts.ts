import { WRONG_KIND } from '../kinds.js';
import { ObjectScript } from '../redis/object-script.js';
import { Script } from '../redis/script.js';

/**
 * RCountDownLatch scripts (Redisson's `RedissonCountDownLatch`). KEYS[1] = the latch: a hash with
 * `count` (the count; a missing key = 0: open) and `kind` = `count-down-latch` (a name serves one kind of
 * object at a time: a key of another kind fails every script with WRONGTYPE, nothing written); KEYS[2] =
 * the request latch. ARGV[1..4] as in `ObjectScript`.
 */

/**
 * Lua: `count()`, the latch's count (0 when the key does not exist), or the WRONGTYPE error reply when
 * the key belongs to another kind (`HMGET`, which Redis refuses itself on a key that is no hash).
 */
const COUNT = `${WRONG_KIND}local function count()
  local marks = redis.call('hmget', KEYS[1], 'kind', 'count')
  if marks[1] == 'count-down-latch' then return tonumber(marks[2]) end
  if marks[1] or redis.call('exists', KEYS[1]) == 1 then return wrongKind(marks[1]) end
  return 0
end
`;

/** Sets the count to ARGV[5] if the latch does not exist (is open): 1, else 0. */
export const TRY_SET_COUNT = new ObjectScript(
  'latch.trySetCount',
  `${COUNT}local current = count()
if type(current) == 'table' then return current end
if current > 0 then return 0 end
redis.call('hset', KEYS[1], 'kind', 'count-down-latch', 'count', ARGV[5])
return answer(1)`,
  true,
);

/**
 * Counts down by one. At zero the key is deleted and `0` is published (every awaiter wakes). Returns
 * the new count (0 when the latch was already open: nothing changes then).
 */
export const COUNT_DOWN = new ObjectScript(
  'latch.countDown',
  `${COUNT}local current = count()
if type(current) == 'table' then return current end
if current == 0 then return 0 end
local left = redis.call('hincrby', KEYS[1], 'count', -1)
if left <= 0 then
  redis.call('del', KEYS[1])
  publish('0')
  left = 0
end
return answer(left)`,
  true,
);

/** The count (0: open), or a WRONGTYPE error when the key belongs to another kind. Reads only. KEYS[1] = the latch. */
export const READ_COUNT = new Script('latch.count', `${COUNT}return count()`, { readOnly: true });
