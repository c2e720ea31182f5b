import { ObjectScript } from '../redis/object-script.js';
import { Script } from '../redis/script.js';

/**
 * RPermitExpirableSemaphore scripts (after Redisson's `RedissonPermitExpirableSemaphore`, with Redis
 * server time instead of the client's clock).
 *
 * KEYS[1] = the permits: a sorted set, member = permit id, score = its expiry in Redis server time (ms
 * since the epoch, from `TIME`); its TTL is kept at least as long as its longest lease, so it disappears
 * when every holder is gone. KEYS[2] = the limit: a string holding the total number of permits (missing
 * = 0). KEYS[3] = the request latch of scripts built with `replay`. ARGV[1..4] as in `ObjectScript`.
 * Free permits = limit − members. Every script first reclaims expired permits (`ZREMRANGEBYSCORE`) and,
 * when it did and permits are free, publishes the free count; on a key of another kind (every other kind
 * keeps a hash or a string there) Redis refuses that first command with WRONGTYPE, before anything is
 * written.
 */

/** `now`: Redis server time in ms. */
const NOW = `local now
do
  local t = redis.call('time')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

const PRELUDE = `${NOW}local function free()
  return (tonumber(redis.call('get', KEYS[2])) or 0) - redis.call('zcard', KEYS[1])
end
local function announce()
  local n = free()
  if n > 0 then publish(n) end
end
local function keepFor(ms)
  if redis.call('pttl', KEYS[1]) < ms then redis.call('pexpire', KEYS[1], ms) end
end
local function stamp(flag, expiry, count, idOf)
  local args = {}
  for i = 1, count do
    args[#args + 1] = expiry
    args[#args + 1] = idOf(i)
    if #args >= 400 or i == count then
      if flag then redis.call('zadd', KEYS[1], flag, unpack(args)) else redis.call('zadd', KEYS[1], unpack(args)) end
      args = {}
    end
  end
end
local function missing(from)
  local out = {}
  for i = from, #ARGV do
    if not redis.call('zscore', KEYS[1], ARGV[i]) then out[#out + 1] = i - from + 1 end
  end
  return out
end
if redis.call('zremrangebyscore', KEYS[1], '-inf', now) > 0 then announce() end
`;

const script = (name: string, body: string, replay = false): ObjectScript => new ObjectScript(name, PRELUDE + body, replay);

/**
 * Acquire. ARGV[5] = lease (ms), ARGV[6] = permits n, ARGV[7] = id base: the ids are the base itself
 * when n = 1, else `base:1` … `base:n`. On a retry whose earlier attempt went through (the first id
 * exists) only the expiries are renewed. Takes the permits if n are free and returns 1; else returns
 * `{ free, ms until the nearest expiry or -1 }`. Ids are stamped in chunks (no `unpack` of a long list).
 */
export const ACQUIRE = script(
  'permits.acquire',
  `local lease = tonumber(ARGV[5])
local n = tonumber(ARGV[6])
local function idOf(i)
  if n == 1 then return ARGV[7] end
  return ARGV[7] .. ':' .. i
end
local retried = ARGV[2] == '1' and redis.call('zscore', KEYS[1], idOf(1))
local available = free()
if retried or available >= n then
  stamp(retried and 'XX' or nil, now + lease, n, idOf)
  keepFor(lease)
  return 1
end
local first = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')
return {available, first[2] and (tonumber(first[2]) - now) or -1}`,
);

/**
 * Release, all or nothing. ARGV[5…] = permit ids. When one of them is not held, changes nothing and
 * returns the positions (from 1) of those not held; else removes them all (in chunks), publishes the
 * free count and returns how many were released.
 */
export const RELEASE = script(
  'permits.release',
  `local gone = missing(5)
if #gone > 0 then return gone end
for i = 5, #ARGV, 500 do
  redis.call('zrem', KEYS[1], unpack(ARGV, i, math.min(i + 499, #ARGV)))
end
announce()
return answer(#ARGV - 4)`,
  true,
);

/**
 * New lease for held permits, all or nothing. ARGV[5] = lease (ms), ARGV[6…] = permit ids. Returns the
 * positions of the ids not held (nothing changed), or the number of permits whose expiry became now +
 * lease.
 */
export const UPDATE_LEASE = script(
  'permits.updateLeaseTime',
  `local gone = missing(6)
if #gone > 0 then return gone end
local count = #ARGV - 5
stamp('XX', now + tonumber(ARGV[5]), count, function(i) return ARGV[i + 5] end)
keepFor(tonumber(ARGV[5]))
return count`,
);

/** ARGV[5] = a permit id: the ms until it expires (Redis server time), or -2 when it is not held. */
export const LEASE_TIME = script(
  'permits.getLeaseTime',
  `local expiry = redis.call('zscore', KEYS[1], ARGV[5])
if not expiry then return -2 end
return tonumber(expiry) - now`,
);

/** Returns `{ limit, permits held }` after reclaiming expired ones. */
export const COUNTS = script('permits.counts', `return {tonumber(redis.call('get', KEYS[2])) or 0, redis.call('zcard', KEYS[1])}`);

/** Sets the limit to ARGV[5] (Redisson's `setPermits`) and publishes the free count. Returns 1. */
export const SET_LIMIT = script(
  'permits.setPermits',
  `redis.call('set', KEYS[2], ARGV[5])
announce()
return 1`,
);

/** Sets the limit to ARGV[5] if none is set yet, with a TTL of ARGV[6] ms ('' for none): 1, else 0. */
export const TRY_SET_LIMIT = script(
  'permits.trySetPermits',
  `if redis.call('setnx', KEYS[2], ARGV[5]) == 1 then
  if ARGV[6] ~= '' then redis.call('pexpire', KEYS[2], ARGV[6]) end
  announce()
  return answer(1)
end
return 0`,
  true,
);

/** Adds ARGV[5] (negative: removes) to the limit; returns the new limit. */
export const ADD_LIMIT = script(
  'permits.addPermits',
  `local limit = redis.call('incrby', KEYS[2], ARGV[5])
announce()
return answer(limit)`,
  true,
);

/**
 * Watchdog renewal of a batch (a `RenewalKind`). KEYS = permit sets; ARGV[1] = lease (ms), ARGV[i + 1] =
 * the permit id in KEYS[i]. Reclaims each set's expired permits (so an expired permit is never revived),
 * then sets each permit still held to expire one lease from now. Returns 1 (renewed) or 0 (gone, or the
 * key holds another type) per permit.
 */
export const RENEW = new Script(
  'permits.renew',
  `${NOW}local lease = tonumber(ARGV[1])
local out = {}
local seen = {}
for i = 1, #KEYS do
  local key = KEYS[i]
  if seen[key] == nil then
    seen[key] = false
    redis.pcall('zremrangebyscore', key, '-inf', now)
  end
  if type(redis.pcall('zscore', key, ARGV[i + 1])) == 'string' then
    redis.call('zadd', key, 'XX', now + lease, ARGV[i + 1])
    seen[key] = true
    out[i] = 1
  else
    out[i] = 0
  end
end
for key, renewed in pairs(seen) do
  if renewed and redis.call('pttl', key) < lease then redis.call('pexpire', key, lease) end
end
return out`,
);
