import { WRONG_KIND } from '../kinds.js';
import { holdSource, unlockSource } from '../lock/scripts.js';
import { Script } from '../redis/script.js';

/** The fair lock's kind, as its hash's `kind` field holds it (a Lua string). */
const KIND = "'fair-lock'";

/**
 * RFairLock scripts (after Redisson's `RedissonFairLock`, with liveness deadlines instead of positional
 * ones). Every script gets KEYS[1] = lock hash (as RLock's), then (after the unlock latch in the unlock
 * script) the queue (LIST of waiting owner ids, head first) and the deadlines (ZSET owner id → server
 * time in ms after which the waiter counts as dead). A waiter's deadline is `now + fairLockWaitTimeout` from its latest attempt, so a live waiter,
 * which retries at least every third of that, never reaches it, and one waiter's deadline never depends
 * on the others' (nothing to shift when waiters come and go). Every time is Redis server time.
 */

/**
 * Shared start of every fair-lock script, given the queue and deadline keys: `now` (server ms), `first`
 * (the head of the queue before this script), the removal of every waiter past its deadline (dead,
 * wherever it is in the queue), and `notify(previous, caller, prefix, publish)`, which wakes the head of
 * the queue when it is no longer `previous` (so it starts watching the holder's lease) unless it is the
 * caller itself.
 */
function prelude(queueKey: string, timeoutKey: string): string {
  return `local queue, timeouts = ${queueKey}, ${timeoutKey}
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local first = redis.call('lindex', queue, 0)
local dead = redis.call('zrangebyscore', timeouts, '-inf', now)
for i = 1, #dead do
  redis.call('zrem', timeouts, dead[i])
  redis.call('lrem', queue, 1, dead[i])
end
local function notify(previous, caller, prefix, publish)
  local head = redis.call('lindex', queue, 0)
  if head and head ~= previous and head ~= caller then redis.call(publish, prefix .. ':' .. head, '0') end
end
`;
}

const PRELUDE = prelude('KEYS[2]', 'KEYS[3]');

/**
 * Acquire, from the hash locks' shared Lua (`holdSource`: kind check, guard, reentry rule, first grant).
 * ARGV[1] = lease (ms), ARGV[2] = owner, ARGV[3] = guard ('' or the hold count before an attempt whose
 * reply was lost, as RLock's), ARGV[4] = fairLockWaitTimeout (ms), ARGV[5] = '1' to join (or stay in) the
 * queue when not granted, '0' for a single attempt, ARGV[6] = channel prefix (a waiter listens on
 * prefix:owner), ARGV[7] = publish command, ARGV[8] = longest retry (ms, a third of the wait timeout),
 * ARGV[9] = the owner's hold count as the client knows it (`'lost'` when it is not 0 and Redis has no
 * hold of the owner: nothing written, see `holdSource`). Grants a reentrant acquisition (the TTL raised to the lease, never lowered, as RLock's), or a first one
 * when the lock is free and the queue empty or headed by the owner (who then leaves the queue, and the
 * next waiter is told it is the head). Otherwise, when joining, adds the owner at the tail or refreshes
 * its deadline. Returns nil when granted, else the ms after which to retry without a message: the
 * holder's PTTL for the head, the nearest waiter deadline (a dead waiter's removal can change the head),
 * at most ARGV[8]; a WRONGTYPE error (nothing written) when the key belongs to another kind.
 */
export const FAIR_ACQUIRE = new Script(
  'fairLock.acquire',
  `${holdSource(KIND, 'ARGV[9]')}local free = redis.call('exists', KEYS[1]) == 0
if free and ended() then return 'lost' end
if not free then
  local entered = enter()
  if type(entered) == 'table' then return entered end
  if entered == 'lost' then return 'lost' end
  if entered then return nil end
end
${PRELUDE}
local head = redis.call('lindex', queue, 0)
if free and (not head or head == ARGV[2]) then
  if head then
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, ARGV[2])
  end
  grant()
  notify(first, ARGV[2], ARGV[6], ARGV[7])
  return nil
end
if ARGV[5] == '1' and redis.call('zadd', timeouts, now + tonumber(ARGV[4]), ARGV[2]) == 1 then
  redis.call('rpush', queue, ARGV[2])
end
notify(first, ARGV[2], ARGV[6], ARGV[7])
local retry = tonumber(ARGV[8])
if redis.call('lindex', queue, 0) == ARGV[2] then
  local ttl = redis.call('pttl', KEYS[1])
  if ttl >= 0 then retry = math.min(retry, ttl) end
end
local soonest = redis.call('zrange', timeouts, 0, 0, 'withscores')
if soonest[2] then retry = math.min(retry, tonumber(soonest[2]) - now) end
return retry`,
);

/**
 * Unlock (RLock's, see `unlockSource`). KEYS[2] = unlock latch, KEYS[3] = queue, KEYS[4] = deadlines.
 * ARGV[1] = owner, ARGV[2] = channel prefix, ARGV[3] = publish command, ARGV[4] = latch TTL (ms),
 * ARGV[5] = '1' on a retry of the call, ARGV[6] = guard ('' or the owner's hold count before it). Returns nil when the owner does not hold the lock, 0 when one hold
 * was released and others remain, 1 when the lock was deleted and the head of the queue (only it) was sent
 * `0` on its own channel.
 */
export const FAIR_UNLOCK = new Script(
  'fairLock.unlock',
  unlockSource({
    prelude: prelude('KEYS[3]', 'KEYS[4]'),
    kept: "notify(first, '', ARGV[2], ARGV[3])",
    released: "notify(nil, '', ARGV[2], ARGV[3])",
  }),
);

/**
 * Force unlock. ARGV[1] = channel prefix, ARGV[2] = publish command. Deletes the lock whoever holds it and
 * wakes the head of the queue. Returns 1 when a lock was deleted, else 0; a WRONGTYPE error (nothing
 * written) when the key belongs to another kind or holds another Redis type.
 */
export const FAIR_FORCE_UNLOCK = new Script(
  'fairLock.forceUnlock',
  `${WRONG_KIND}if redis.call('exists', KEYS[1]) == 1 then
  local found = redis.call('hget', KEYS[1], 'kind')
  if found ~= ${KIND} then return wrongKind(found) end
end
${PRELUDE}
if redis.call('del', KEYS[1]) == 1 then
  notify(nil, '', ARGV[1], ARGV[2])
  return 1
end
notify(first, '', ARGV[1], ARGV[2])
return 0`,
);

/**
 * Leave the queue (Redisson's `acquireFailed`): a waiter that gave up (wait time over, aborted, failed).
 * ARGV[1] = owner, ARGV[2] = channel prefix, ARGV[3] = publish command. When it was the head, the next
 * waiter is told it is the head now (and takes a free lock at once). Returns 1 when it was queued, else 0.
 */
export const FAIR_LEAVE = new Script(
  'fairLock.leave',
  `${PRELUDE}
local removed = redis.call('lrem', queue, 0, ARGV[1])
redis.call('zrem', timeouts, ARGV[1])
notify(first, ARGV[1], ARGV[2], ARGV[3])
return removed > 0 and 1 or 0`,
);
