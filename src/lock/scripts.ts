import { WRONG_KIND } from '../kinds.js';
import { Script } from '../redis/script.js';

/**
 * RLock scripts (Redisson's `RedissonLock` scripts). The lock is a hash at the lock key: field = owner
 * id (`clientId:contextId`), value = hold count, and the field `kind` naming the kind of lock (`lock`,
 * `spin-lock`, `fenced-lock`, `fair-lock`; see `ObjectKind`).
 */

/**
 * Lua shared by the acquire scripts of the hash locks (RLock, spin, fenced, fair), for KEYS[1] = lock,
 * ARGV[1] = lease (ms), ARGV[2] = owner, ARGV[3] = guard ('' or the owner's hold count before an attempt
 * whose reply was lost), with `kind` a Lua expression naming the lock's kind (see `ObjectKind`) and
 * `held` one naming the owner's hold count as the client knows it (a decimal string):
 * - `ended()`: the client believes the owner holds the lock (`held` is not '0') but Redis has no hold of
 *   it (its lease ran out, or the key was deleted, without the client knowing). The acquire scripts then
 *   answer `'lost'` and write nothing, so that the client forgets the ended hold and asks again with a
 *   count of 0: a write is only ever made on a count the client knows, so a retry's guard (that count)
 *   recognises its own lost attempt exactly. Without this, a lost reply of a first grant to such an owner
 *   was retried with its stale count as the guard, which did not recognise the grant and added a second
 *   hold (hold count 2 after one call). One string comparison on the happy path, no write.
 *   A count above the client's (holds of the same owner id it does not know of, as with a shared
 *   `identifier`) is not detected.
 * - `extend()`, the reentry rule of every hash lock: the TTL is raised to the lease when it is shorter and
 *   never lowered, so an inner shorter lease never cuts an outer hold short (Redisson resets the TTL to
 *   the inner lease, which can expire an outer watchdog hold before its next renewal).
 * - `grant()`: a first hold, hold count 1 and the `kind` field in one `HSET`, TTL = the lease.
 * - `enter()`, for a lock key that exists: the `WRONGTYPE relock:<kind>` error reply when it belongs to
 *   another kind (nothing written); `'replay'` when the guard finds the hold of the lost attempt (the
 *   owner's count is already one more than before it: no second hold is added, the TTL follows the
 *   rule); `'reentered'` after adding a hold of the owner (hold count + 1, TTL per the rule); `'lost'`
 *   when the owner holds nothing and `ended()`; false when another owner holds it. The kind and the
 *   owner's count are read in one `HMGET`, which Redis refuses with WRONGTYPE when the key is no hash.
 */
export function holdSource(kind: string, held: string): string {
  return `${WRONG_KIND}local function ended()
  return ${held} ~= '0'
end
local function extend()
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then redis.call('pexpire', KEYS[1], ARGV[1]) end
end
local function grant()
  redis.call('hset', KEYS[1], ARGV[2], 1, 'kind', ${kind})
  redis.call('pexpire', KEYS[1], ARGV[1])
end
local function enter()
  local held = redis.call('hmget', KEYS[1], 'kind', ARGV[2])
  if held[1] ~= ${kind} then return wrongKind(held[1]) end
  local count = tonumber(held[2] or '0')
  if count == 0 then return ended() and 'lost' end
  local guard = tonumber(ARGV[3])
  if guard ~= nil and count == guard + 1 then
    extend()
    return 'replay'
  end
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  extend()
  return 'reentered'
end
`;
}

/**
 * The acquire script of RLock, the spin lock and the fenced lock, with what it returns in each case:
 * `lostReply` when a retry finds that its lost attempt went through, `granted` after a first or reentrant
 * acquisition, `busy` when another owner holds the lock; `'lost'` (nothing written) when the client
 * believes the owner holds the lock and Redis has no hold of it; a WRONGTYPE error when the key belongs to
 * another kind (see `holdSource`). KEYS[1] = lock (more keys for variants); ARGV[1] = lease (ms), ARGV[2]
 * = owner, ARGV[3] = guard or '', ARGV[4] = the lock's kind (`lock`, `spin-lock`, `fenced-lock`), ARGV[5]
 * = the owner's hold count as the client knows it.
 */
export function acquireSource(results: { lostReply: string; granted: string; busy: string }): string {
  return `${holdSource('ARGV[4]', 'ARGV[5]')}if redis.call('exists', KEYS[1]) == 0 then
  if ended() then return 'lost' end
  grant()
  ${results.granted}
end
local entered = enter()
if type(entered) == 'table' then return entered end
if entered == 'replay' then ${results.lostReply} end
if entered == 'lost' then return 'lost' end
if entered then ${results.granted} end
${results.busy}`;
}

/**
 * RLock and spin-lock acquire: nil when acquired, `'lost'` when the client's hold had ended (see
 * `holdSource`), else the holder's PTTL in ms (-1: the key has no TTL).
 */
export const ACQUIRE = new Script(
  'lock.acquire',
  acquireSource({ lostReply: 'return nil', granted: 'return nil', busy: "return redis.call('pttl', KEYS[1])" }),
);

/**
 * The start of every unlock script: a retry of an unlock call (`retry` = '1') whose first attempt stored
 * its answer in the call's latch key returns that answer again (`-1` stands for nil).
 */
export function latchReplay(retry: string, latch: string): string {
  return `if ${retry} == '1' then
  local replay = redis.call('get', ${latch})
  if replay == '-1' then return nil end
  if replay then return tonumber(replay) end
end
`;
}

/**
 * The unlock script of every hash lock, with Lua run at three points: `prelude` before anything else is
 * read (after the latch replay), `kept` after one of several holds was released, `released` after the
 * lock was deleted. KEYS[1] = lock, KEYS[2] = unlock latch of this call (more keys for variants).
 * ARGV[1] = owner, ARGV[2] = channel, ARGV[3] = publish command (`publish` or `spublish`), ARGV[4] =
 * latch TTL (ms), ARGV[5] = '1' when this is a retry of the call, ARGV[6] = guard: the owner's hold count
 * before the call as the client knows it, or '' when it may not know it (a grant whose reply was lost may
 * be in Redis, or a background release of such a grant).
 * Returns nil when the owner does not hold the lock, 0 when one hold was released and others remain (TTL
 * unchanged), 1 when the lock was deleted; 2 or 3 for 0 or 1 when a guarded call stored its answer in the
 * latch after all (see below: the caller deletes the latch then).
 * A retry must replay the first attempt's answer when that attempt went through and its reply was lost:
 * - With a guard, nothing is written on the happy path (issue 12): a retry that finds the owner's count
 *   one below the guard answers what the first attempt did (0, or 1 at zero) without releasing again
 *   (only the owner's own unlocks lower its count; an expiry removes the whole hash). A nil answer is
 *   stored in the latch, so that a retry tells "the first attempt found no hold" from "it released the
 *   last one"; so is an answer given while the owner's count differed from the guard (the client's count
 *   is stale, as after a lease ran out inside a reentrant context), replied as 2 or 3. Not exact: a first
 *   attempt that never reached Redis, when the hold then ended before the retry (read as released: the
 *   owner holds nothing either way), or when the stale count is one above Redis's (the retry answers
 *   without releasing; the hold then ends with its lease).
 * - Without a guard every answer but nil is stored in the latch (Redisson's `unlock_latch`) and a retry
 *   replays it.
 */
export function unlockSource(parts: { prelude?: string; kept?: string; released: string }): string {
  return `${latchReplay('ARGV[5]', 'KEYS[2]')}${parts.prelude ?? ''}
local guard = tonumber(ARGV[6])
local count = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
if guard ~= nil and ARGV[5] == '1' and count == guard - 1 then
  if count == 0 then return 1 end
  return 0
end
if count == 0 then
  if guard ~= nil then redis.call('set', KEYS[2], -1, 'px', ARGV[4]) end
  return nil
end
local result = 0
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  ${parts.kept ?? ''}
else
  redis.call('del', KEYS[1])
  ${parts.released}
  result = 1
end
if guard ~= nil and count == guard then return result end
redis.call('set', KEYS[2], result, 'px', ARGV[4])
if guard ~= nil then return result + 2 end
return result`;
}

/**
 * RLock unlock: at release, `0` is published on the lock's channel (ARGV[2]), unless the channel is ''
 * (the spin lock, whose waiters do not subscribe).
 */
export const UNLOCK = new Script('lock.unlock', unlockSource({ released: "if ARGV[2] ~= '' then redis.call(ARGV[3], ARGV[2], '0') end" }));

/**
 * Force unlock. KEYS[1] = lock. ARGV[1] = channel ('' to publish nothing), ARGV[2] = publish command,
 * ARGV[3] = the lock's kind. Returns 1 when a lock was deleted, else 0; a WRONGTYPE error when the key
 * holds another Redis type or belongs to another kind (it is left alone: never delete another object's
 * key or application data).
 */
export const FORCE_UNLOCK = new Script(
  'lock.forceUnlock',
  `${WRONG_KIND}if redis.call('exists', KEYS[1]) == 0 then return 0 end
local found = redis.call('hget', KEYS[1], 'kind')
if found ~= ARGV[3] then return wrongKind(found) end
redis.call('del', KEYS[1])
if ARGV[1] ~= '' then redis.call(ARGV[2], ARGV[1], '0') end
return 1`,
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
