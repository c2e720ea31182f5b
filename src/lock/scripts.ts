import { WRONG_KIND } from '../kinds.js';
import { PUBLISH } from '../redis/lua.js';
import { BatchScript, defineScript, replies } from '../redis/script.js';

/**
 * RLock scripts (Redisson's `RedissonLock` scripts), and the Lua fragments every hash lock (RLock, spin,
 * fenced, fair, read-write) composes its scripts from. The lock is a hash at the lock key: field = owner
 * id (`clientId:contextId`), value = hold count, and the field `kind` naming the kind of lock (`lock`,
 * `spin-lock`, `fenced-lock`, `fair-lock`; see `ObjectKind`).
 */

/**
 * The answer of one run of an acquire script: granted (with a fencing token for fenced locks), or the
 * holder's PTTL, or (`lost`, see `HOLD_ENDED`) nothing done because the owner's hold had ended in Redis.
 */
export type AcquireResult = { readonly granted: true; readonly token?: bigint } | { readonly granted: false; readonly ttl: number; readonly lost?: true };

const GRANTED: AcquireResult = Object.freeze({ granted: true });

/**
 * An acquire script's `'lost'` answer (see `holdSource`): the client sent a hold count above 0 but Redis
 * has no hold of the owner; nothing was written, and the attempt is made again with the count corrected.
 */
export const HOLD_ENDED: AcquireResult = Object.freeze({ granted: false, ttl: 0, lost: true });

/**
 * The answer of an acquire script that returns nil when granted, `'lost'` (see `holdSource`), else the
 * holder's PTTL (RLock, spin, fair, read-write).
 */
export const acquireResult = (reply: unknown): AcquireResult => (reply === null ? GRANTED : reply === 'lost' ? HOLD_ENDED : { granted: false, ttl: Number(reply) });

/** The keys of every hash lock's acquire script, first: the lock hash. */
export const ACQUIRE_KEYS = ['lock'] as const;

/**
 * The arguments of every hash lock's acquire script, first (their names are what `holdSource` reads):
 * `leaseMs`; `owner`, the owner id (its field); `guard`, '' or the owner's hold count before an attempt
 * whose reply was lost; `heldCount`, the owner's hold count as the client knows it (a decimal string).
 */
export const ACQUIRE_ARGS = ['leaseMs', 'owner', 'guard', 'heldCount'] as const;

/**
 * Lua shared by the acquire scripts of the hash locks (RLock, spin, fenced, fair), for the key `lock` and
 * the arguments `ACQUIRE_ARGS`, with `kind` a Lua expression naming the lock's kind (see `ObjectKind`):
 * - `ended()`: the client believes the owner holds the lock (`heldCount` is not '0') but Redis has no
 *   hold of it (its lease ran out, or the key was deleted, without the client knowing). The acquire
 *   scripts then answer `'lost'` and write nothing, so that the client forgets the ended hold and asks
 *   again with a count of 0: a write is only ever made on a count the client knows, so a retry's guard
 *   (that count) recognises its own lost attempt exactly. Without this, a lost reply of a first grant to
 *   such an owner was retried with its stale count as the guard, which did not recognise the grant and
 *   added a second hold (hold count 2 after one call). One string comparison on the happy path, no write.
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
/** The Lua of a first hold (hold count 1 and the `kind` field in one `HSET`, TTL = the lease), for `grant()` and the acquire's free-key path. */
const GRANT = (kind: string): string => `redis.call('hset', lock, owner, 1, 'kind', ${kind})
  redis.call('pexpire', lock, leaseMs)`;

export function holdSource(kind: string): string {
  return `${WRONG_KIND}local function ended()
  return heldCount ~= '0'
end
local function extend()
  if redis.call('pttl', lock) < tonumber(leaseMs) then redis.call('pexpire', lock, leaseMs) end
end
local function grant()
  ${GRANT(kind)}
end
local function enter()
  local held = redis.call('hmget', lock, 'kind', owner)
  if held[1] ~= ${kind} then return wrongKind(held[1]) end
  local count = tonumber(held[2] or '0')
  if count == 0 then return ended() and 'lost' end
  local before = tonumber(guard)
  if before ~= nil and count == before + 1 then
    extend()
    return 'replay'
  end
  redis.call('hincrby', lock, owner, 1)
  extend()
  return 'reentered'
end
`;
}

/**
 * The acquire Lua of RLock, the spin lock and the fenced lock (`holdSource` with the argument `kind`,
 * after `ACQUIRE_ARGS`), with what it returns in each case: `lostReply` when a retry finds that its lost
 * attempt went through, `granted` after a first or reentrant acquisition, `busy` when another owner holds
 * the lock; `'lost'` (nothing written) when the client believes the owner holds the lock and Redis has no
 * hold of it; a WRONGTYPE error when the key belongs to another kind. The free key comes first, before
 * the functions of `holdSource` are defined: a first grant (the common case) runs no more Lua than it
 * needs (issue 12: a quarter of the acquire's and unlock's Redis time together).
 */
export function acquireSource(results: { lostReply: string; granted: string; busy: string }): string {
  return `if redis.call('exists', lock) == 0 then
  if heldCount ~= '0' then return 'lost' end
  ${GRANT('kind')}
  ${results.granted}
end
${holdSource('kind')}local entered = enter()
if type(entered) == 'table' then return entered end
if entered == 'replay' then ${results.lostReply} end
if entered == 'lost' then return 'lost' end
if entered then ${results.granted} end
${results.busy}`;
}

/**
 * RLock and spin-lock acquire. `kind` = the lock's kind (`lock`, `spin-lock`). Nil when acquired, else
 * the holder's PTTL in ms (-1: the key has no TTL), or `'lost'`; parsed by `acquireResult`.
 */
export const ACQUIRE = defineScript({
  name: 'lock.acquire',
  keys: ACQUIRE_KEYS,
  args: [...ACQUIRE_ARGS, 'kind'],
  lua: acquireSource({ lostReply: 'return nil', granted: 'return nil', busy: "return redis.call('pttl', lock)" }),
  parse: acquireResult,
});

/**
 * The start of every unlock script: a retry of an unlock call (the argument `retry` = '1') whose first
 * attempt stored its answer in the call's latch key (the key `latch`) returns that answer again (`-1`
 * stands for nil).
 */
export const LATCH_REPLAY = `if retry == '1' then
  local replay = redis.call('get', latch)
  if replay == '-1' then return nil end
  if replay then return tonumber(replay) end
end
`;

/** The keys of every hash lock's unlock script, first: the lock hash and the unlock latch of this call. */
export const UNLOCK_KEYS = ['lock', 'latch'] as const;

/**
 * The arguments of every hash lock's unlock script: `owner`; `channel` (the fair lock: the channel
 * prefix); `publishCommand` (`publish` or `spublish`); `latchTtl` (ms); `retry`, '1' when this is a retry
 * of the call; `guard`, the owner's hold count before the call as the client knows it, or '' when it may
 * not know it (a grant whose reply was lost may be in Redis, or a background release of such a grant).
 */
export const UNLOCK_ARGS = ['owner', 'channel', 'publishCommand', 'latchTtl', 'retry', 'guard'] as const;

/**
 * The unlock Lua of every hash lock (keys `UNLOCK_KEYS` first, arguments `UNLOCK_ARGS`), with Lua run at
 * three points: `prelude` before anything else is read (after the latch replay), `kept` after one of
 * several holds was released, `released` after the lock was deleted.
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
  return `${LATCH_REPLAY}${parts.prelude ?? ''}
local expected = tonumber(guard)
local count = tonumber(redis.call('hget', lock, owner) or '0')
if expected ~= nil and retry == '1' and count == expected - 1 then
  if count == 0 then return 1 end
  return 0
end
if count == 0 then
  if expected ~= nil then redis.call('set', latch, -1, 'px', latchTtl) end
  return nil
end
local result = 0
if count > 1 then
  redis.call('hincrby', lock, owner, -1)
  ${parts.kept ?? ''}
else
  redis.call('del', lock)
  ${parts.released}
  result = 1
end
if expected ~= nil and count == expected then return result end
redis.call('set', latch, result, 'px', latchTtl)
if expected ~= nil then return result + 2 end
return result`;
}

/**
 * RLock unlock (see `unlockSource`): at release, `0` is published on the lock's channel, unless the
 * channel is '' (the spin lock, whose waiters do not subscribe). Parsed: nil as null, else 0 to 3.
 */
export const UNLOCK = defineScript({
  name: 'lock.unlock',
  keys: UNLOCK_KEYS,
  args: UNLOCK_ARGS,
  lua: unlockSource({ released: "if channel ~= '' then redis.call(publishCommand, channel, '0') end" }),
  parse: replies.integerOrNil,
});

/**
 * Force unlock. `channel` = '' to publish nothing; `kind` = the lock's kind. True when a lock was
 * deleted, else false; a WRONGTYPE error when the key holds another Redis type or belongs to another kind
 * (it is left alone: never delete another object's key or application data).
 */
export const FORCE_UNLOCK = defineScript({
  name: 'lock.forceUnlock',
  keys: ['lock'],
  args: ['channel', 'publishCommand', 'kind'],
  lua: `${WRONG_KIND}${PUBLISH}if redis.call('exists', lock) == 0 then return 0 end
local found = redis.call('hget', lock, 'kind')
if found ~= kind then return wrongKind(found) end
redis.call('del', lock)
if channel ~= '' then publish('0') end
return 1`,
  parse: replies.flag,
});

/**
 * Watchdog renewal of a batch (a `BatchScript`). KEYS = lock keys; ARGV[1] = `leaseMs`, ARGV[i + 1] =
 * owner of KEYS[i]. Sets each key's TTL to the lease if the owner still holds it. Returns 1 (renewed) or
 * 0 (gone, or the key now holds another type) per key.
 */
export const RENEW = new BatchScript(
  'lock.renew',
  ['leaseMs'],
  `local out = {}
for i = 1, #KEYS do
  local lock, owner = KEYS[i], ARGV[i + 1]
  if redis.pcall('hexists', lock, owner) == 1 then
    redis.call('pexpire', lock, leaseMs)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out`,
);
