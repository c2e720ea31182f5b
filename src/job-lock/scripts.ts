import { defineScript, replies } from '../redis/script.js';

/**
 * `runExclusive`'s early finish (ShedLock's `lockAtLeastFor`): when `owner` still holds the job lock
 * (`lock`), its TTL is lowered to `ms` (the rest of `atLeastMs`) if it is longer, never raised, and the
 * lock is left to expire then. Replies 1 when the owner held it, 0 when it did not (nothing written).
 */
export const JOB_SHORTEN = defineScript({
  name: 'jobLock.shorten',
  keys: ['lock'],
  args: ['owner', 'ms'],
  lua: `if redis.call('hexists', lock, owner) == 0 then return 0 end
local ttl = redis.call('pttl', lock)
if ttl < 0 or ttl > tonumber(ms) then redis.call('pexpire', lock, ms) end
return 1`,
  parse: replies.flag,
});
