import { Script } from '../redis/script.js';

/**
 * RLock scripts (Redisson's `RedissonLock` scripts). The lock is a hash at the lock key: field = owner
 * id (`clientId:contextId`), value = hold count.
 */

/**
 * The acquire script of every hash lock, with what it returns in each case: `lostReply` when a retry finds
 * that its lost attempt went through (`guard` = ARGV[3], the hold count before it: the owner's count is
 * already one more, so no second hold is added), `granted` after a first acquisition (hold count 1, TTL =
 * the lease) or a reentrant one (hold count + 1, TTL raised to the lease if it was shorter: an inner
 * shorter lease never cuts an outer hold short, where Redisson resets the TTL to it), `busy` when another
 * owner holds it. KEYS[1] = lock (more keys for variants); ARGV[1] = lease (ms), ARGV[2] = owner,
 * ARGV[3] = guard or ''.
 */
export function acquireSource(results: { lostReply: string; granted: string; busy: string }): string {
  return `local function extend()
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then redis.call('pexpire', KEYS[1], ARGV[1]) end
end
local guard = tonumber(ARGV[3])
if guard ~= nil and tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0') == guard + 1 then
  extend()
  ${results.lostReply}
end
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  ${results.granted}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  extend()
  ${results.granted}
end
${results.busy}`;
}

/** RLock acquire: nil when acquired, else the holder's PTTL in ms (-1: the key has no TTL). */
export const ACQUIRE = new Script(
  'lock.acquire',
  acquireSource({ lostReply: 'return nil', granted: 'return nil', busy: "return redis.call('pttl', KEYS[1])" }),
);

/**
 * The start of every unlock script: a retry of an unlock call (`retry` = '1') whose first attempt stored
 * its answer in the call's latch key returns that answer again.
 */
export function latchReplay(retry: string, latch: string): string {
  return `if ${retry} == '1' then
  local replay = redis.call('get', ${latch})
  if replay then return tonumber(replay) end
end
`;
}

/**
 * The unlock script of every hash lock, with Lua run at three points: `prelude` before anything else is
 * read (after the latch replay), `kept` after one of several holds was released, `released` after the
 * lock was deleted. KEYS[1] = lock, KEYS[2] = unlock latch of this call (more keys for variants).
 * ARGV[1] = owner, ARGV[2] = channel, ARGV[3] = publish command (`publish` or `spublish`), ARGV[4] =
 * latch TTL (ms), ARGV[5] = '1' when this is a retry of the call. A retry replays the answer stored in
 * the latch, if any; otherwise returns nil when the owner does not hold the lock, 0 when one hold was
 * released and others remain (TTL unchanged), 1 when the lock was deleted, and stores that answer in
 * the latch.
 */
export function unlockSource(parts: { prelude?: string; kept?: string; released: string }): string {
  return `${latchReplay('ARGV[5]', 'KEYS[2]')}${parts.prelude ?? ''}
local count = redis.call('hget', KEYS[1], ARGV[1])
if not count then return nil end
local result = 0
if tonumber(count) > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  ${parts.kept ?? ''}
else
  redis.call('del', KEYS[1])
  ${parts.released}
  result = 1
end
redis.call('set', KEYS[2], result, 'px', ARGV[4])
return result`;
}

/**
 * RLock unlock: at release, `0` is published on the lock's channel (ARGV[2]), unless the channel is ''
 * (the spin lock, whose waiters do not subscribe).
 */
export const UNLOCK = new Script('lock.unlock', unlockSource({ released: "if ARGV[2] ~= '' then redis.call(ARGV[3], ARGV[2], '0') end" }));

/**
 * Force unlock. KEYS[1] = lock. ARGV[1] = channel ('' to publish nothing), ARGV[2] = publish command.
 * Returns 1 when a lock was deleted, else 0; a WRONGTYPE error when the key holds something else (it is
 * left alone: never delete application data).
 */
export const FORCE_UNLOCK = new Script(
  'lock.forceUnlock',
  `local kind = redis.call('type', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
if redis.call('del', KEYS[1]) == 1 then
  if ARGV[1] ~= '' then redis.call(ARGV[2], ARGV[1], '0') end
  return 1
end
return 0`,
);

/**
 * Watchdog renewal of a batch. KEYS = lock keys; ARGV[1] = lease (ms), ARGV[i + 1] = owner of KEYS[i].
 * Sets each key's TTL to the lease if the owner still holds it. Returns 1 (renewed) or 0 (gone, or the
 * key now holds another type) per key.
 */
export const RENEW = new Script(
  'lock.renew',
  `local out = {}
for i = 1, #KEYS do
  if redis.pcall('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out`,
);
