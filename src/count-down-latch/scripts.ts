import { ObjectScript } from '../redis/object-script.js';

/**
 * RCountDownLatch scripts (Redisson's `RedissonCountDownLatch`). KEYS[1] = the latch: a string holding
 * the count (missing = 0: open); KEYS[2] = the request latch. ARGV[1..4] as in `ObjectScript`.
 */

/** Sets the count to ARGV[5] if the latch does not exist (is open): 1, else 0. */
export const TRY_SET_COUNT = new ObjectScript(
  'latch.trySetCount',
  `if redis.call('setnx', KEYS[1], ARGV[5]) == 1 then return answer(1) end
return 0`,
  true,
);

/**
 * Counts down by one. At zero the key is deleted and `0` is published (every awaiter wakes). Returns
 * the new count (0 when the latch was already open: nothing changes then).
 */
export const COUNT_DOWN = new ObjectScript(
  'latch.countDown',
  `if redis.call('exists', KEYS[1]) == 0 then return 0 end
local count = redis.call('decr', KEYS[1])
if count <= 0 then
  redis.call('del', KEYS[1])
  publish('0')
  count = 0
end
return answer(count)`,
  true,
);
