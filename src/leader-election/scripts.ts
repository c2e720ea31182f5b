import { WRONG_KIND } from '../kinds.js';
import { ACQUIRE_ARGS, acquireSource, HOLD_ENDED, type AcquireResult } from '../lock/scripts.js';
import { PUBLISH } from '../redis/lua.js';
import { defineScript } from '../redis/script.js';

/**
 * Leader-election scripts. The election is a fenced lock (`fencedLock.acquire`'s Lua, composed from
 * `acquireSource`) whose hash also carries the leader's published identity (`leader`) and its term
 * (`term`), with the term counter at `relock:term:{name}` (the fenced lock's counter under its own part, so
 * that the CLI tells an idle election from a fenced lock).
 */

/**
 * Campaign attempt: the fenced-lock acquire (key `lock`, counter `fence`) with `kind` =
 * `leader-election`; when granted it also writes `leader` = `identity` and `term` = the new token in the
 * hash and publishes `<term> <identity>` on `channel` (the election's leader channel,
 * `relock:channel:{name}:leader`), the message `observe()` reads. Replies as `fencedLock.acquire`.
 */
export const LEADER_ACQUIRE = defineScript({
  name: 'leader.campaign',
  keys: ['lock', 'fence'],
  args: [...ACQUIRE_ARGS, 'kind', 'identity', 'channel', 'publishCommand'],
  lua: `${PUBLISH}${acquireSource({
    lostReply: "return {1, tostring(redis.call('get', fence) or '0')}",
    granted: `local term = tostring(redis.call('incr', fence))
  redis.call('hset', lock, 'leader', identity, 'term', term)
  publish(term .. ' ' .. identity)
  return {1, term}`,
    busy: "return {0, redis.call('pttl', lock)}",
  })}`,
  parse: (reply): AcquireResult => {
    if (reply === 'lost') return HOLD_ENDED;
    const [granted, value] = reply as [number, string | number];
    return Number(granted) === 1 ? { granted: true, token: BigInt(value) } : { granted: false, ttl: Number(value) };
  },
});

/**
 * Who leads (read only): `{identity, term, pttl}` from the election's hash, or nil when nobody does; a
 * WRONGTYPE error when the name belongs to another kind (`kind` = `leader-election`).
 */
export const LEADER_READ = defineScript({
  name: 'leader.read',
  keys: ['lock'],
  args: ['kind'],
  readOnly: true,
  lua: `${WRONG_KIND}if redis.call('exists', lock) == 0 then return nil end
local v = redis.call('hmget', lock, 'kind', 'leader', 'term')
if v[1] ~= kind then return wrongKind(v[1]) end
if not v[2] then return nil end
return {v[2], v[3], redis.call('pttl', lock)}`,
  parse: (reply): { identity: string; term: bigint; remainingMs: number } | undefined => {
    if (reply === null || reply === undefined) return undefined;
    const [identity, term, pttl] = reply as [string, string, number];
    return { identity: String(identity), term: BigInt(term), remainingMs: Number(pttl) };
  },
});
