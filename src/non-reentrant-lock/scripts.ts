import { LATCH_REPLAY, UNLOCK_ARGS, UNLOCK_KEYS } from '../lock/scripts.js';
import { PUBLISH } from '../redis/lua.js';
import { BatchScript, defineScript, replies } from '../redis/script.js';

/**
 * The non-reentrant lock's Redis commands (Redisson 4.4's `RedissonNonReentrantLock`, on a plain string):
 * the lock is a string at the lock key whose value is the owner id (`clientId:contextId`, or the caller's
 * `identifier`), with a TTL.
 *
 * The acquire is no script: `SET key owner NX PX lease GET` (see `RNonReentrantLock`). Release, renewal and
 * force unlock compare the value with the owner in Lua, because Redis 7.0, 7.2 and 7.4 have no command that
 * deletes or expires a key only when it holds a given value.
 *
 * The capability seam: `UNLOCK` and `RENEW` are the only release and renewal commands of this lock. Newer
 * servers have native compare-and-delete / compare-and-set commands (Valkey 9.0 `DELIFEQ key value`; Redis
 * 8.4 `DELEX key IFEQ value`; Valkey 8.1 and Redis 8.4 `SET key value IFEQ value PX ms`), which would
 * replace the scripts once the connection probes them (`COMMAND INFO`, cached per connection). They are not
 * used yet: this project tests against Redis 7.0 only and none of those servers could be built and run
 * where it is developed, so a native path would ship unverified. Even then, the unlock publishes the
 * waiters' wake-up in the same script, which a native `DELIFEQ` cannot (it would take a pipelined
 * `PUBLISH` after it, or waiters would wake by their TTL timer).
 */

/**
 * Compare-and-delete unlock (keys `UNLOCK_KEYS`, arguments `UNLOCK_ARGS`, as RLock's so that the shared
 * unlock path runs it): when the key holds `owner`, `DEL` and `0` published on `channel`, answer 1; else
 * nil (the owner does not hold it). A retry (`retry` = '1') of a call whose first attempt stored its answer
 * in the latch replays it (`LATCH_REPLAY`); with a `guard` (the client knows the hold: nothing is written
 * on the happy path) a nil answer is stored in the latch (-1), so that a retry tells "the first attempt
 * found no hold" (nil replayed: `IllegalMonitorStateError`) from "it released it", and a retry that finds
 * the owner gone without a latch answers 1, as RLock's guarded retry does (read as released: the owner
 * holds nothing either way). Without a guard (a lost grant may be in Redis) the answer 1 is stored in the
 * latch. A WRONGTYPE error when the key holds another Redis type (a hash lock).
 */
export const UNLOCK = defineScript({
  name: 'non-reentrant-lock.unlock',
  keys: UNLOCK_KEYS,
  args: UNLOCK_ARGS,
  lua: `${PUBLISH}${LATCH_REPLAY}if redis.call('get', lock) ~= owner then
  if retry == '1' and guard ~= '' then return 1 end
  if guard ~= '' then redis.call('set', latch, -1, 'px', latchTtl) end
  return nil
end
redis.call('del', lock)
publish('0')
if guard == '' then redis.call('set', latch, 1, 'px', latchTtl) end
return 1`,
  parse: replies.integerOrNil,
});

/**
 * Watchdog renewal of a batch (a `BatchScript`, as RLock's `RENEW`): KEYS = lock keys; ARGV[1] = `leaseMs`,
 * ARGV[i + 1] = owner of KEYS[i]. Sets each key's TTL to the lease if it still holds its owner (compare and
 * `PEXPIRE`). Returns 1 (renewed) or 0 (gone, another owner's, or another Redis type) per key.
 */
export const RENEW = new BatchScript(
  'non-reentrant-lock.renew',
  ['leaseMs'],
  `local out = {}
for i = 1, #KEYS do
  local got = redis.pcall('get', KEYS[i])
  if got == ARGV[i + 1] then
    redis.call('pexpire', KEYS[i], leaseMs)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out`,
);

/**
 * Force unlock: deletes the string whoever holds it and publishes `0` on `channel`. 1 when a lock was
 * deleted, else 0; a WRONGTYPE error (nothing deleted) when the key holds another Redis type.
 */
export const FORCE_UNLOCK = defineScript({
  name: 'non-reentrant-lock.forceUnlock',
  keys: ['lock'],
  args: ['channel', 'publishCommand'],
  lua: `${PUBLISH}if not redis.call('get', lock) then return 0 end
redis.call('del', lock)
publish('0')
return 1`,
  parse: replies.flag,
});

/**
 * The lock's state in one read: `[holder or null, PTTL]` (the `GET` and the `PTTL` of the key). A
 * WRONGTYPE error when the key holds another Redis type. Reads only.
 */
export const STATE = defineScript({
  name: 'non-reentrant-lock.state',
  keys: ['lock'],
  args: [],
  readOnly: true,
  lua: `return {redis.call('get', lock) or false, redis.call('pttl', lock)}`,
  parse: (reply): [holder: string | null, pttl: number] => {
    const [holder, pttl] = reply as [unknown, unknown];
    return [holder === false ? null : text(holder), Number(pttl)];
  },
});

/** A string reply as text (a `Buffer` decoded as UTF-8), nil as null. */
export function text(reply: unknown): string | null {
  if (reply === null || reply === undefined) return null;
  if (typeof reply === 'string') return reply;
  return Buffer.isBuffer(reply) ? reply.toString('utf8') : JSON.stringify(reply);
}
