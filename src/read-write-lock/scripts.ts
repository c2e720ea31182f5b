import { WRONG_KIND } from '../kinds.js';
import { latchReplay } from '../lock/scripts.js';
import { Script } from '../redis/script.js';

/**
 * RReadWriteLock scripts (after Redisson's `RedissonReadLock` / `RedissonWriteLock`). KEYS[1] = the lock
 * hash: `mode` → `read` | `write`, `<owner>` → read hold count, `<owner>:write` → write hold count.
 * KEYS[2] = the holds' leases: a ZSET `<field>:<n>` → deadline (Redis server time, ms) of the n-th hold
 * of that field, one member per hold (Redisson keeps a string key with a TTL per read hold instead; a
 * ZSET keeps every key in KEYS and finds the longest lease in O(log n)). Both keys always carry the same
 * TTL: that of the longest live hold, so a lock whose holders died frees itself when their last lease
 * ends, and a shorter lease never shortens a longer one.
 */

/** Server time in ms as `now`. */
const NOW = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * Acquire. ARGV[1] = lease (ms), ARGV[2] = the field of this side (`owner` to read, `owner:write` to
 * write), ARGV[3] = guard ('' or the field's count before an attempt whose reply was lost: when it is
 * one more, that attempt went through and nothing is added), ARGV[4] = side (`read` | `write`), ARGV[5] =
 * the owner's write field (read side: downgrade allowed while the owner writes), ARGV[6] = write side: the
 * owner's read field, else ''. A read is granted when the lock is free, in read mode, or write-locked by
 * the same owner; a write when the lock is free or write-locked by the same owner (reentry). Returns nil
 * when granted; `'upgrade'` when a write is refused while the owner itself has a live read hold (its lease
 * not ended, checked here in Redis: an expired or force-unlocked read hold is no upgrade); else the lock's
 * PTTL (ms); a
 * WRONGTYPE error (nothing written) when the key is a hash without `mode`, i.e. another kind of object
 * (its `kind` field), or no hash at all.
 */
export const RW_ACQUIRE = new Script(
  'readWriteLock.acquire',
  `${WRONG_KIND}if redis.call('exists', KEYS[1]) == 1 then
  local marks = redis.call('hmget', KEYS[1], 'mode', 'kind', ARGV[2])
  local mode, count = marks[1], tonumber(marks[3] or '0')
  if not mode then return wrongKind(marks[2]) end
  local guard = tonumber(ARGV[3])
  if guard ~= nil and count == guard + 1 then return nil end
  if count == 0 and (ARGV[4] == 'write' or mode == 'write') and redis.call('hexists', KEYS[1], ARGV[5]) == 0 then
    if ARGV[6] ~= '' then
      ${NOW}for i = 1, tonumber(redis.call('hget', KEYS[1], ARGV[6]) or '0') do
        if (tonumber(redis.call('zscore', KEYS[2], ARGV[6] .. ':' .. i)) or 0) > now then return 'upgrade' end
      end
    end
    return redis.call('pttl', KEYS[1])
  end
else
  redis.call('del', KEYS[2])
  redis.call('hset', KEYS[1], 'mode', ARGV[4])
end
${NOW}local lease = tonumber(ARGV[1])
local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('zadd', KEYS[2], now + lease, ARGV[2] .. ':' .. n)
local ttl = math.max(redis.call('pttl', KEYS[1]), lease)
redis.call('pexpire', KEYS[1], ttl)
redis.call('pexpire', KEYS[2], ttl)
return nil`,
);

/**
 * Unlock one hold. KEYS[3] = unlock latch. ARGV[1] = field (`owner` or `owner:write`), ARGV[2] = side,
 * ARGV[3] = channel, ARGV[4] = publish command, ARGV[5] = latch TTL (ms), ARGV[6] = '1' on a retry of the
 * call (replays the latch), ARGV[7] = guard: the field's hold count before the call as the client knows
 * it, or '' (latch every answer). The guard works as RLock's (see `unlockSource`): on the happy path
 * (the count is the guard) nothing is written but the lock's keys; a retry that finds the count one
 * below the guard answers what the first attempt did without releasing again; a nil answer, or one given
 * while the count differed from the guard, is stored in the latch (replied as 2 or 3 for 0 or 1).
 * 1. Holds whose lease ended (any owner's: crashed or frozen clients) are forgotten, and so is an owner
 *    with no hold left; when that owner was the writer, the lock turns to read mode.
 * 2. The field's newest hold is removed; when none of its holds is live (all leases ended) the reply is
 *    nil, as for an owner that never held it.
 * 3. When the writer's last write hold goes, the lock turns to read mode: the writer's own read holds stay
 *    (a downgrade) and `1` is published so that waiting readers enter.
 * 4. The lock then lives as long as its longest live hold; with none left it is deleted and `1` (after
 *    write mode: wake every waiter) or `0` (after read mode: one waiter per process, a writer) published.
 * Returns nil, 0 (holds of this side remain) or 1 (the owner no longer holds this side), or 2/3 (see the
 * guard); a WRONGTYPE error (nothing written) when the key belongs to another kind.
 */
export const RW_UNLOCK = new Script(
  'readWriteLock.unlock',
  `${WRONG_KIND}${latchReplay('ARGV[6]', 'KEYS[3]')}local marks = redis.call('hmget', KEYS[1], 'mode', 'kind')
if not marks[1] and redis.call('exists', KEYS[1]) == 1 then return wrongKind(marks[2]) end
${NOW}local downgraded = false
for _, member in ipairs(redis.call('zrangebyscore', KEYS[2], '-inf', now)) do
  redis.call('zrem', KEYS[2], member)
  local holder = string.match(member, '^(.+):%d+$')
  local left = false
  for i = 1, tonumber(redis.call('hget', KEYS[1], holder) or '0') do
    if redis.call('zscore', KEYS[2], holder .. ':' .. i) then
      left = true
      break
    end
  end
  if not left and redis.call('hdel', KEYS[1], holder) == 1 and string.sub(holder, -6) == ':write' then downgraded = true end
end
local field = ARGV[1]
local n = tonumber(redis.call('hget', KEYS[1], field))
local guard = tonumber(ARGV[7])
if guard ~= nil and ARGV[6] == '1' and (n or 0) == guard - 1 then
  if n == nil then return 1 end
  return 0
end
local live = false
for i = 1, n or 0 do
  if redis.call('zscore', KEYS[2], field .. ':' .. i) then
    live = true
    break
  end
end
local result = 0
if live and n > 1 then
  redis.call('zrem', KEYS[2], field .. ':' .. n)
  redis.call('hincrby', KEYS[1], field, -1)
elseif n then
  for i = 1, n do redis.call('zrem', KEYS[2], field .. ':' .. i) end
  redis.call('hdel', KEYS[1], field)
  result = 1
  if ARGV[2] == 'write' then downgraded = true end
end
local mode = redis.call('hget', KEYS[1], 'mode')
downgraded = downgraded and mode == 'write'
if downgraded then redis.call('hset', KEYS[1], 'mode', 'read') end
local top = redis.call('zrange', KEYS[2], -1, -1, 'withscores')
if top[2] then
  local ttl = tonumber(top[2]) - now
  redis.call('pexpire', KEYS[1], ttl)
  redis.call('pexpire', KEYS[2], ttl)
  if downgraded then redis.call(ARGV[4], ARGV[3], '1') end
else
  redis.call('del', KEYS[1], KEYS[2])
  redis.call(ARGV[4], ARGV[3], mode == 'write' and '1' or '0')
end
if not live then
  if guard ~= nil then redis.call('set', KEYS[3], -1, 'px', ARGV[5]) end
  return nil
end
if guard ~= nil and n == guard then return result end
redis.call('set', KEYS[3], result, 'px', ARGV[5])
if guard ~= nil then return result + 2 end
return result`,
);

/**
 * Watchdog renewal of a batch (Redisson's `ReadLockTask`, without its cross-client bug #7098). Per hold:
 * KEYS = lock hash, leases ZSET; ARGV[1] = lease (ms), then one field per hold (`owner` or
 * `owner:write`). Only that field's live holds are extended to now + lease (never shortened, never
 * revived once ended), so a client renews its own holds only and a crashed client's holds end with their
 * leases; the lock's TTL becomes at least the lease. Returns 1 per hold with a live hold, else 0.
 */
export const RW_RENEW = new Script(
  'readWriteLock.renew',
  `${NOW}local lease = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS / 2 do
  local hash, leases, field = KEYS[2 * i - 1], KEYS[2 * i], ARGV[i + 1]
  local n = tonumber(redis.pcall('hget', hash, field))
  out[i] = 0
  for j = 1, n or 0 do
    local member = field .. ':' .. j
    local deadline = tonumber(redis.pcall('zscore', leases, member))
    if deadline and deadline > now then
      out[i] = 1
      if deadline < now + lease then redis.call('zadd', leases, now + lease, member) end
    end
  end
  if out[i] == 1 then
    local ttl = math.max(redis.call('pttl', hash), lease)
    redis.call('pexpire', hash, ttl)
    redis.call('pexpire', leases, ttl)
  end
end
return out`,
);

/**
 * Force unlock. ARGV[1] = side: the lock is deleted only when it is in that mode (Redisson's
 * `forceUnlock` of the read or write lock). ARGV[2] = channel, ARGV[3] = publish command. Publishes `1`
 * (wake every waiter). Returns 1 when deleted, else 0.
 */
export const RW_FORCE_UNLOCK = new Script(
  'readWriteLock.forceUnlock',
  `if redis.call('hget', KEYS[1], 'mode') ~= ARGV[1] then return 0 end
redis.call('del', KEYS[1], KEYS[2])
redis.call(ARGV[3], ARGV[2], '1')
return 1`,
);

/**
 * Whether a side is locked (Redisson's `isLocked`). ARGV[1] = side. Write: the lock is in write mode.
 * Read: in read mode, or in write mode with a read hold of the writer (more fields than `mode` and the
 * writer's). Returns 1 or 0.
 */
export const RW_IS_LOCKED = new Script(
  'readWriteLock.isLocked',
  `local mode = redis.call('hget', KEYS[1], 'mode')
if ARGV[1] == 'write' or mode ~= 'write' then return mode == ARGV[1] and 1 or 0 end
return redis.call('hlen', KEYS[1]) > 2 and 1 or 0`,
  { readOnly: true },
);
