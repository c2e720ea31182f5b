import { defineObjectScript } from '../redis/object-script.js';
import { NOW } from '../redis/lua.js';
import { BatchScript, replies, type Names, type ScriptSpec } from '../redis/script.js';
import { takeReply } from '../semaphore/permits.js';

/**
 * RPermitExpirableSemaphore scripts (after Redisson's `RedissonPermitExpirableSemaphore`, with Redis
 * server time instead of the client's clock).
 *
 * The key `permits`: a sorted set, member = permit id, score = its expiry in Redis server time (ms
 * since the epoch, from `TIME`); its TTL is kept at least as long as its longest lease, so it disappears
 * when every holder is gone. The key `limit`: a string holding the total number of permits (missing = 0).
 * Free permits = limit − members. Every script first reclaims expired permits (`ZREMRANGEBYSCORE`) and,
 * when it did and permits are free, publishes the free count; on a key of another kind (every other kind
 * keeps a hash or a string there) Redis refuses that first command with WRONGTYPE, before anything is
 * written.
 */

const PRELUDE = `${NOW}local function free()
  return (tonumber(redis.call('get', limit)) or 0) - redis.call('zcard', permits)
end
local function announce()
  local n = free()
  if n > 0 then publish(n) end
end
local function keepFor(ms)
  if redis.call('pttl', permits) < ms then redis.call('pexpire', permits, ms) end
end
local function stamp(flag, expiry, count, idOf)
  local args = {}
  for i = 1, count do
    args[#args + 1] = expiry
    args[#args + 1] = idOf(i)
    if #args >= 400 or i == count then
      if flag then redis.call('zadd', permits, flag, unpack(args)) else redis.call('zadd', permits, unpack(args)) end
      args = {}
    end
  end
end
local function missing(from)
  local out = {}
  for i = from, #ARGV do
    if not redis.call('zscore', permits, ARGV[i]) then out[#out + 1] = i - from + 1 end
  end
  return out
end
if redis.call('zremrangebyscore', permits, '-inf', now) > 0 then announce() end
`;

/** The keys of every permit script. */
const PERMIT_KEYS = ['permits', 'limit'] as const;

/** An `ObjectScript` on `PERMIT_KEYS` that starts with `PRELUDE` (`replay` false unless given). */
const script = <const A extends Names, R, const Rest extends string = never>(spec: Omit<ScriptSpec<typeof PERMIT_KEYS, A, R, Rest>, 'keys'> & { replay?: boolean }) =>
  defineObjectScript({ ...spec, keys: PERMIT_KEYS, replay: spec.replay ?? false, lua: PRELUDE + spec.lua });

/** A release or lease-change reply: the positions (from 1) of the ids not held, or a count when all were. */
const positionsReply = (reply: unknown): number[] | number => (Array.isArray(reply) ? reply.map(Number) : Number(reply));

/**
 * Acquire. `leaseMs`; `count` = permits n; `idBase`: the ids are the base itself when n = 1, else
 * `base:1` … `base:n`. On a retry whose earlier attempt went through (the first id exists) only the
 * expiries are renewed. Takes the permits if n are free and returns 1; else returns `{ free, ms until the
 * nearest expiry or -1, 1 when the limit was ever set else 0 }` (see `takeReply`). Ids are stamped in chunks (no `unpack` of a long list).
 */
export const ACQUIRE = script({
  name: 'permits.acquire',
  args: ['leaseMs', 'count', 'idBase'],
  lua: `local lease = tonumber(leaseMs)
local n = tonumber(count)
local function idOf(i)
  if n == 1 then return idBase end
  return idBase .. ':' .. i
end
local retried = retry == '1' and redis.call('zscore', permits, idOf(1))
local available = free()
if retried or available >= n then
  stamp(retried and 'XX' or nil, now + lease, n, idOf)
  keepFor(lease)
  return 1
end
local first = redis.call('zrange', permits, 0, 0, 'WITHSCORES')
return {available, first[2] and (tonumber(first[2]) - now) or -1, redis.call('exists', limit)}`,
  parse: takeReply,
});

/**
 * Release, all or nothing, of the permit `ids` (a list). When one of them is not held, changes nothing
 * and returns the positions (from 1) of those not held; else removes them all (in chunks), publishes the
 * free count and returns how many were released.
 */
export const RELEASE = script({
  name: 'permits.release',
  args: [],
  rest: 'ids',
  replay: true,
  lua: `local gone = missing(idsFrom)
if #gone > 0 then return gone end
for i = idsFrom, #ARGV, 500 do
  redis.call('zrem', permits, unpack(ARGV, i, math.min(i + 499, #ARGV)))
end
announce()
return answer(#ARGV - idsFrom + 1)`,
  parse: positionsReply,
});

/**
 * New lease (`leaseMs`) for the held permits `ids` (a list), all or nothing. Returns the positions of
 * the ids not held (nothing changed), or the number of permits whose expiry became now + lease.
 */
export const UPDATE_LEASE = script({
  name: 'permits.updateLeaseTime',
  args: ['leaseMs'],
  rest: 'ids',
  lua: `local gone = missing(idsFrom)
if #gone > 0 then return gone end
local n = #ARGV - idsFrom + 1
stamp('XX', now + tonumber(leaseMs), n, function(i) return ARGV[i + idsFrom - 1] end)
keepFor(tonumber(leaseMs))
return n`,
  parse: positionsReply,
});

/** `permitId`: the ms until it expires (Redis server time), or -2 when it is not held. */
export const LEASE_TIME = script({
  name: 'permits.getLeaseTime',
  args: ['permitId'],
  lua: `local expiry = redis.call('zscore', permits, permitId)
if not expiry then return -2 end
return tonumber(expiry) - now`,
  parse: replies.integer,
});

/** Returns `[limit, permits held]` after reclaiming expired ones. */
export const COUNTS = script({
  name: 'permits.counts',
  args: [],
  lua: `return {tonumber(redis.call('get', limit)) or 0, redis.call('zcard', permits)}`,
  parse: (reply): [limit: number, held: number] => {
    const [total, held] = reply as [unknown, unknown];
    return [Number(total), Number(held)];
  },
});

/** Sets the limit to `total` (Redisson's `setPermits`) and publishes the free count. */
export const SET_LIMIT = script({
  name: 'permits.setPermits',
  args: ['total'],
  lua: `redis.call('set', limit, total)
announce()
return 1`,
  parse: replies.flag,
});

/** Sets the limit to `total` if none is set yet, with a TTL of `ttlMs` ('' for none): true, else false. */
export const TRY_SET_LIMIT = script({
  name: 'permits.trySetPermits',
  args: ['total', 'ttlMs'],
  replay: true,
  lua: `if redis.call('setnx', limit, total) == 1 then
  if ttlMs ~= '' then redis.call('pexpire', limit, ttlMs) end
  announce()
  return answer(1)
end
return 0`,
  parse: replies.flag,
});

/** Adds `delta` (negative: removes) to the limit; returns the new limit. */
export const ADD_LIMIT = script({
  name: 'permits.addPermits',
  args: ['delta'],
  replay: true,
  lua: `local total = redis.call('incrby', limit, delta)
announce()
return answer(total)`,
  parse: replies.integer,
});

/**
 * Watchdog renewal of a batch (a `BatchScript`). KEYS = permit sets; ARGV[1] = `leaseMs`, ARGV[i + 1] =
 * the permit id in KEYS[i]. Reclaims each set's expired permits (so an expired permit is never revived),
 * then sets each permit still held to expire one lease from now. Returns 1 (renewed) or 0 (gone, or the
 * key holds another type) per permit.
 */
export const RENEW = new BatchScript(
  'permits.renew',
  ['leaseMs'],
  `${NOW}local lease = tonumber(leaseMs)
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
