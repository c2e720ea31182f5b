import { ACQUIRE_ARGS, acquireSource, HOLD_ENDED, type AcquireResult } from '../lock/scripts.js';
import { defineScript } from '../redis/script.js';

/**
 * Fenced acquire (Redisson's `RedissonFencedLock`): the RLock acquire plus `INCR` of the fencing counter
 * (the key `fence`, no TTL) in the same script, on every acquisition including reentrant ones. Arguments
 * as RLock's (`kind` = `fenced-lock`). Replies `{1, token}` when acquired (the token as a string, for
 * 64-bit precision; a retry after a lost reply gets the token its attempt took), parsed as a grant with
 * its token; `'lost'` when the client's hold had ended (see `holdSource`), parsed as `HOLD_ENDED`; else
 * `{0, PTTL of the holder}`; a WRONGTYPE error when the name belongs to another kind.
 */
export const FENCED_ACQUIRE = defineScript({
  name: 'fencedLock.acquire',
  keys: ['lock', 'fence'],
  args: [...ACQUIRE_ARGS, 'kind'],
  lua: acquireSource({
    lostReply: "return {1, tostring(redis.call('get', fence) or '0')}",
    granted: "return {1, tostring(redis.call('incr', fence))}",
    busy: "return {0, redis.call('pttl', lock)}",
  }),
  parse: (reply): AcquireResult => {
    if (reply === 'lost') return HOLD_ENDED;
    const [granted, value] = reply as [number, string | number];
    return Number(granted) === 1 ? { granted: true, token: BigInt(value) } : { granted: false, ttl: Number(value) };
  },
});
