import { ACQUIRE_ARGS, acquireSource, HOLD_ENDED, type AcquireResult } from '../lock/scripts.js';
import { defineScript } from '../redis/script.js';

/**
 * Fenced acquire (Redisson's `RedissonFencedLock`): the RLock acquire plus `INCR` of the fencing counter
 * (the key `fence`, no TTL) in the same script, on every acquisition including reentrant ones. Arguments
 * as RLock's (`kind` = `fenced-lock`). Replies `{1, token}` when acquired (the token as a string read
 * back with `GET` after the `INCR`, exact up to 2^63-1: the `INCR` reply is a Lua double inside the script,
 * which `tostring` prints as `1e+14` from 10^14 and which is rounded past 2^53, so it is never returned;
 * a retry after a lost reply gets the token its attempt took), parsed as a grant with
 * its token; `'lost'` when the client's hold had ended (see `holdSource`), parsed as `HOLD_ENDED`; else
 * `{0, PTTL of the holder}`; a WRONGTYPE error when the name belongs to another kind.
 */
export const FENCED_ACQUIRE = defineScript({
  name: 'fencedLock.acquire',
  keys: ['lock', 'fence'],
  args: [...ACQUIRE_ARGS, 'kind'],
  lua: acquireSource({
    lostReply: "return {1, tostring(redis.call('get', fence) or '0')}",
    granted: "redis.call('incr', fence)\nreturn {1, redis.call('get', fence)}",
    busy: "return {0, redis.call('pttl', lock)}",
  }),
  parse: (reply): AcquireResult => {
    if (reply === 'lost') return HOLD_ENDED;
    const [granted, value] = reply as [number, string | number];
    return Number(granted) === 1 ? { granted: true, token: BigInt(value) } : { granted: false, ttl: Number(value) };
  },
});
