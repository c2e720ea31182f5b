import { WRONG_KIND } from '../kinds.js';
import { acquireResult, ACQUIRE_ARGS, holdSource, UNLOCK_ARGS, UNLOCK_KEYS, unlockSource } from '../lock/scripts.js';
import { NOW } from '../redis/lua.js';
import { defineScript, replies } from '../redis/script.js';

/** The fair lock's kind, as its hash's `kind` field holds it (a Lua string). */
const KIND = "'fair-lock'";

/**
 * RFairLock scripts (after Redisson's `RedissonFairLock`, with liveness deadlines instead of positional
 * ones). Every script gets the key `lock` (the lock hash, as RLock's), then (after the unlock latch in the
 * unlock script) `queue` (LIST of waiting owner ids, head first) and `timeouts` (ZSET owner id → server
 * time in ms after which the waiter counts as dead), and the arguments `channel` (the channel prefix: a
 * waiter listens on `channel:owner`) and `publishCommand`. A waiter's deadline is `now +
 * fairLockWaitTimeout` from its latest attempt, so a live waiter, which retries at least every third of
 * that, never reaches it, and one waiter's deadline never depends on the others' (nothing to shift when
 * waiters come and go). Every time is Redis server time.
 */

/** The keys of every fair-lock script after the lock (and the unlock latch). */
const QUEUE_KEYS = ['queue', 'timeouts'] as const;

/**
 * Shared start of every fair-lock script: `now` (server ms), `first` (the head of the queue before this
 * script), the removal of every waiter past its deadline (dead, wherever it is in the queue), and
 * `notify(previous, caller)`, which wakes the head of the queue when it is no longer `previous` (so it
 * starts watching the holder's lease) unless it is the caller itself.
 */
const PRELUDE = `${NOW}local first = redis.call('lindex', queue, 0)
local dead = redis.call('zrangebyscore', timeouts, '-inf', now)
for i = 1, #dead do
  redis.call('zrem', timeouts, dead[i])
  redis.call('lrem', queue, 1, dead[i])
end
local function notify(previous, caller)
  local head = redis.call('lindex', queue, 0)
  if head and head ~= previous and head ~= caller then redis.call(publishCommand, channel .. ':' .. head, '0') end
end
`;

/**
 * Acquire, from the hash locks' shared Lua (`holdSource`: kind check, guard, reentry rule, first grant)
 * with RLock's first arguments (`ACQUIRE_ARGS`), then `waitTimeoutMs` (fairLockWaitTimeout), `join` ('1'
 * to join, or stay in, the queue when not granted; '0' for a single attempt), `channel`,
 * `publishCommand` and `maxRetryMs` (longest retry, a third of the wait timeout).
 * Grants a reentrant acquisition (the TTL raised to the lease, never lowered, as RLock's), or a first one
 * when the lock is free and the queue empty or headed by the owner (who then leaves the queue, and the
 * next waiter is told it is the head). Otherwise, when joining, adds the owner at the tail or refreshes
 * its deadline. Returns nil when granted, else the ms after which to retry without a message: the
 * holder's PTTL for the head, the nearest waiter deadline (a dead waiter's removal can change the head),
 * at most `maxRetryMs`; `'lost'` (nothing written) when the client's hold had ended (see `holdSource`);
 * a WRONGTYPE error (nothing written) when the key belongs to another kind.
 */
export const FAIR_ACQUIRE = defineScript({
  name: 'fairLock.acquire',
  keys: ['lock', ...QUEUE_KEYS],
  args: [...ACQUIRE_ARGS, 'waitTimeoutMs', 'join', 'channel', 'publishCommand', 'maxRetryMs'],
  lua: `${holdSource(KIND)}local free = redis.call('exists', lock) == 0
if free and ended() then return 'lost' end
if not free then
  local entered = enter()
  if type(entered) == 'table' then return entered end
  if entered == 'lost' then return 'lost' end
  if entered then return nil end
end
${PRELUDE}
local head = redis.call('lindex', queue, 0)
if free and (not head or head == owner) then
  if head then
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, owner)
  end
  grant()
  notify(first, owner)
  return nil
end
if join == '1' and redis.call('zadd', timeouts, now + tonumber(waitTimeoutMs), owner) == 1 then
  redis.call('rpush', queue, owner)
end
notify(first, owner)
local retry = tonumber(maxRetryMs)
if redis.call('lindex', queue, 0) == owner then
  local ttl = redis.call('pttl', lock)
  if ttl >= 0 then retry = math.min(retry, ttl) end
end
local soonest = redis.call('zrange', timeouts, 0, 0, 'withscores')
if soonest[2] then retry = math.min(retry, tonumber(soonest[2]) - now) end
return retry`,
  parse: acquireResult,
});

/**
 * Unlock (RLock's, see `unlockSource`), with the queue keys after the latch. Returns nil when the owner
 * does not hold the lock, 0 when one hold was released and others remain, 1 when the lock was deleted
 * and the head of the queue (only it) was sent `0` on its own channel (2 and 3 as RLock's).
 */
export const FAIR_UNLOCK = defineScript({
  name: 'fairLock.unlock',
  keys: [...UNLOCK_KEYS, ...QUEUE_KEYS],
  args: UNLOCK_ARGS,
  lua: unlockSource({ prelude: PRELUDE, kept: "notify(first, '')", released: "notify(nil, '')" }),
  parse: replies.integerOrNil,
});

/**
 * Force unlock. Deletes the lock whoever holds it and wakes the head of the queue. True when a lock was
 * deleted; a WRONGTYPE error (nothing written) when the key belongs to another kind or holds another
 * Redis type.
 */
export const FAIR_FORCE_UNLOCK = defineScript({
  name: 'fairLock.forceUnlock',
  keys: ['lock', ...QUEUE_KEYS],
  args: ['channel', 'publishCommand'],
  lua: `${WRONG_KIND}if redis.call('exists', lock) == 1 then
  local found = redis.call('hget', lock, 'kind')
  if found ~= ${KIND} then return wrongKind(found) end
end
${PRELUDE}
if redis.call('del', lock) == 1 then
  notify(nil, '')
  return 1
end
notify(first, '')
return 0`,
  parse: replies.flag,
});

/**
 * Leave the queue (Redisson's `acquireFailed`): a waiter (`owner`) that gave up (wait time over, aborted,
 * failed). When it was the head, the next waiter is told it is the head now (and takes a free lock at
 * once). True when it was queued.
 */
export const FAIR_LEAVE = defineScript({
  name: 'fairLock.leave',
  keys: ['lock', ...QUEUE_KEYS],
  args: ['owner', 'channel', 'publishCommand'],
  lua: `${PRELUDE}
local removed = redis.call('lrem', queue, 0, owner)
redis.call('zrem', timeouts, owner)
notify(first, owner)
return removed > 0 and 1 or 0`,
  parse: replies.flag,
});
