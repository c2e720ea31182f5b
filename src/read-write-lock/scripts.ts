import { WRONG_KIND } from '../kinds.js';
import { acquireResult, LATCH_REPLAY, type AcquireResult } from '../lock/scripts.js';
import { NOW } from '../redis/lua.js';
import { BatchScript, defineScript, replies } from '../redis/script.js';

/**
 * RReadWriteLock scripts (after Redisson's `RedissonReadLock` / `RedissonWriteLock`). The key `lock` = the
 * lock hash: `mode` → `read` | `write`, `<owner>` → read hold count, `<owner>:write` → write hold count.
 * The key `leases` = the holds' leases: a ZSET `<field>:<n>` → deadline (Redis server time, ms) of the n-th hold
 * of that field, one member per hold (Redisson keeps a string key with a TTL per read hold instead; a
 * ZSET keeps every key in KEYS and finds the longest lease in O(log n)). Both keys always carry the same
 * TTL: that of the longest live hold, so a lock whose holders died frees itself when their last lease
 * ends, and a shorter lease never shortens a longer one.
 */

/** The keys of every read-write lock script, first. */
const RW_KEYS = ['lock', 'leases'] as const;

/**
 * Acquire. `leaseMs`; `field`, the field of this side (`owner` to read, `owner:write` to write); `guard`,
 * '' or the field's count before an attempt whose reply was lost (when it is one more, that attempt went
 * through and nothing is added); `side` (`read` | `write`); `writeField`, the owner's write field (read
 * side: downgrade allowed while the owner writes); `readField`, write side: the owner's read field, else ''. A read is granted when the lock is free, in read mode, or write-locked by
 * the same owner; a write when the lock is free or write-locked by the same owner (reentry). Returns nil
 * when granted (parsed by `acquireResult`); `'upgrade'` when a write is refused while the owner itself has a live read hold (its lease
 * not ended, checked here in Redis: an expired or force-unlocked read hold is no upgrade); else the lock's
 * PTTL (ms); a
 * WRONGTYPE error (nothing written) when the key is a hash without `mode`, i.e. another kind of object
 * (its `kind` field), or no hash at all.
 */
export const RW_ACQUIRE = defineScript({
  name: 'readWriteLock.acquire',
  keys: RW_KEYS,
  args: ['leaseMs', 'field', 'guard', 'side', 'writeField', 'readField'],
  lua: `${WRONG_KIND}if redis.call('exists', lock) == 1 then
  local marks = redis.call('hmget', lock, 'mode', 'kind', field)
  local mode, count = marks[1], tonumber(marks[3] or '0')
  if not mode then return wrongKind(marks[2]) end
  local before = tonumber(guard)
  if before ~= nil and count == before + 1 then return nil end
  if count == 0 and (side == 'write' or mode == 'write') and redis.call('hexists', lock, writeField) == 0 then
    if readField ~= '' then
      ${NOW}for i = 1, tonumber(redis.call('hget', lock, readField) or '0') do
        if (tonumber(redis.call('zscore', leases, readField .. ':' .. i)) or 0) > now then return 'upgrade' end
      end
    end
    return redis.call('pttl', lock)
  end
else
  redis.call('del', leases)
  redis.call('hset', lock, 'mode', side)
end
${NOW}local lease = tonumber(leaseMs)
local n = redis.call('hincrby', lock, field, 1)
redis.call('zadd', leases, now + lease, field .. ':' .. n)
local ttl = math.max(redis.call('pttl', lock), lease)
redis.call('pexpire', lock, ttl)
redis.call('pexpire', leases, ttl)
return nil`,
  parse: (reply): AcquireResult | 'upgrade' => (reply === 'upgrade' ? reply : acquireResult(reply)),
});

/**
 * Unlock one hold. The key `latch` = unlock latch of this call. `field` (`owner` or `owner:write`),
 * `side`, `channel`, `publishCommand`, `latchTtl` (ms), `retry` = '1' on a retry of the call (replays the
 * latch, `LATCH_REPLAY`), `guard` = the field's hold count before the call as the client knows it, or ''
 * (latch every answer). The guard works as RLock's (see `unlockSource`): on the happy path (the count is
 * the guard) nothing is written but the lock's keys; a retry that finds the count one below the guard
 * answers what the first attempt did without releasing again; a nil answer, or one given while the count
 * differed from the guard, is stored in the latch (replied as 2 or 3 for 0 or 1).
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
export const RW_UNLOCK = defineScript({
  name: 'readWriteLock.unlock',
  keys: [...RW_KEYS, 'latch'],
  args: ['field', 'side', 'channel', 'publishCommand', 'latchTtl', 'retry', 'guard'],
  lua: `${WRONG_KIND}${LATCH_REPLAY}local marks = redis.call('hmget', lock, 'mode', 'kind')
if not marks[1] and redis.call('exists', lock) == 1 then return wrongKind(marks[2]) end
${NOW}local downgraded = false
for _, member in ipairs(redis.call('zrangebyscore', leases, '-inf', now)) do
  redis.call('zrem', leases, member)
  local holder = string.match(member, '^(.+):%d+$')
  local left = false
  for i = 1, tonumber(redis.call('hget', lock, holder) or '0') do
    if redis.call('zscore', leases, holder .. ':' .. i) then
      left = true
      break
    end
  end
  if not left and redis.call('hdel', lock, holder) == 1 and string.sub(holder, -6) == ':write' then downgraded = true end
end
local n = tonumber(redis.call('hget', lock, field))
local expected = tonumber(guard)
if expected ~= nil and retry == '1' and (n or 0) == expected - 1 then
  if n == nil then return 1 end
  return 0
end
local live = false
for i = 1, n or 0 do
  if redis.call('zscore', leases, field .. ':' .. i) then
    live = true
    break
  end
end
local result = 0
if live and n > 1 then
  redis.call('zrem', leases, field .. ':' .. n)
  redis.call('hincrby', lock, field, -1)
elseif n then
  for i = 1, n do redis.call('zrem', leases, field .. ':' .. i) end
  redis.call('hdel', lock, field)
  result = 1
  if side == 'write' then downgraded = true end
end
local mode = redis.call('hget', lock, 'mode')
downgraded = downgraded and mode == 'write'
if downgraded then redis.call('hset', lock, 'mode', 'read') end
local top = redis.call('zrange', leases, -1, -1, 'withscores')
if top[2] then
  local ttl = tonumber(top[2]) - now
  redis.call('pexpire', lock, ttl)
  redis.call('pexpire', leases, ttl)
  if downgraded then redis.call(publishCommand, channel, '1') end
else
  redis.call('del', lock, leases)
  redis.call(publishCommand, channel, mode == 'write' and '1' or '0')
end
if not live then
  if expected ~= nil then redis.call('set', latch, -1, 'px', latchTtl) end
  return nil
end
if expected ~= nil and n == expected then return result end
redis.call('set', latch, result, 'px', latchTtl)
if expected ~= nil then return result + 2 end
return result`,
  parse: replies.integerOrNil,
});

/**
 * Watchdog renewal of a batch (a `BatchScript`; Redisson's `ReadLockTask`, without its cross-client bug
 * #7098). Per hold: KEYS = lock hash, leases ZSET; ARGV[1] = `leaseMs`, then one field per hold (`owner`
 * or `owner:write`). Only that field's live holds are extended to now + lease (never shortened, never
 * revived once ended), so a client renews its own holds only and a crashed client's holds end with their
 * leases; the lock's TTL becomes at least the lease. Returns 1 per hold with a live hold, else 0.
 */
export const RW_RENEW = new BatchScript(
  'readWriteLock.renew',
  ['leaseMs'],
  `${NOW}local lease = tonumber(leaseMs)
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
 * Force unlock. `side`: the lock is deleted only when it is in that mode (Redisson's `forceUnlock` of the
 * read or write lock). Publishes `1` (wake every waiter). True when deleted.
 */
export const RW_FORCE_UNLOCK = defineScript({
  name: 'readWriteLock.forceUnlock',
  keys: RW_KEYS,
  args: ['side', 'channel', 'publishCommand'],
  lua: `if redis.call('hget', lock, 'mode') ~= side then return 0 end
redis.call('del', lock, leases)
redis.call(publishCommand, channel, '1')
return 1`,
  parse: replies.flag,
});

/**
 * Whether a `side` is locked (Redisson's `isLocked`). Write: the lock is in write mode. Read: in read
 * mode, or in write mode with a read hold of the writer (more fields than `mode` and the writer's).
 */
export const RW_IS_LOCKED = defineScript({
  name: 'readWriteLock.isLocked',
  keys: ['lock'],
  args: ['side'],
  readOnly: true,
  lua: `local mode = redis.call('hget', lock, 'mode')
if side == 'write' or mode ~= 'write' then return mode == side and 1 or 0 end
return redis.call('hlen', lock) > 2 and 1 or 0`,
  parse: replies.flag,
});
