import { WRONG_KIND } from '../kinds.js';
import { defineScript } from '../redis/script.js';

/**
 * RFencedResource scripts: every write first passes the fence, in the same script, so the check and the
 * write are one atomic step. The key `resource` is a hash with `kind` = `fenced-resource`, `token` (the
 * highest token accepted, a decimal string) and `value` (the string value); the key `fields` is the hash
 * of the hash variant. Both carry the name's hash tag (one slot). A key of another kind fails every script
 * with WRONGTYPE before anything is written.
 */

/**
 * Lua: `fence(token)`, nil when `token` (decimal digits, no leading zero) is greater than or equal to the
 * highest token accepted, which it then becomes; else `{0, highest}` (the reply of a refused write), or the
 * WRONGTYPE error reply. Tokens are compared as decimal strings (length, then digits): Lua numbers are
 * doubles and would round tokens above 2^53.
 */
const FENCE = `${WRONG_KIND}local function fence(token)
  local marks = redis.call('hmget', resource, 'kind', 'token')
  if marks[1] ~= 'fenced-resource' and (marks[1] or redis.call('exists', resource) == 1) then return wrongKind(marks[1]) end
  local highest = marks[2] or '0'
  if #token < #highest or (#token == #highest and token < highest) then return {0, highest} end
  redis.call('hset', resource, 'kind', 'fenced-resource', 'token', token)
  return nil
end
`;

/** A write's reply: `{1, n}` written (n: what the command replied), or `{0, highest}` refused. */
export type FencedReply = { written: true; count: number } | { written: false; highest: bigint };

const fencedReply = (reply: unknown): FencedReply => {
  const [ok, value] = reply as [number, string | number];
  return Number(ok) === 1 ? { written: true, count: Number(value) } : { written: false, highest: BigInt(value) };
};

/** Sets the value (`HSET resource value`) if the fence accepts `token`. */
export const FENCED_SET = defineScript({
  name: 'fencedResource.set',
  keys: ['resource'],
  args: ['token', 'value'],
  lua: `${FENCE}local refused = fence(token)
if refused then return refused end
redis.call('hset', resource, 'value', value)
return {1, 1}`,
  parse: fencedReply,
});

/** Deletes the value (`HDEL resource value`; the fence stays) if the fence accepts `token`: `{1, 1 or 0}`. */
export const FENCED_DEL = defineScript({
  name: 'fencedResource.del',
  keys: ['resource'],
  args: ['token'],
  lua: `${FENCE}local refused = fence(token)
if refused then return refused end
return {1, redis.call('hdel', resource, 'value')}`,
  parse: fencedReply,
});

/** `HSET fields <pairs…>` if the fence accepts `token`: `{1, fields added}`. */
export const FENCED_HSET = defineScript({
  name: 'fencedResource.hset',
  keys: ['resource', 'fields'],
  args: ['token'],
  rest: 'pairs',
  lua: `${FENCE}local refused = fence(token)
if refused then return refused end
local added = 0
for i = pairsFrom, #ARGV, 2 do added = added + redis.call('hset', fields, ARGV[i], ARGV[i + 1]) end
return {1, added}`,
  parse: fencedReply,
});

/** `HDEL fields <names…>` if the fence accepts `token`: `{1, fields removed}`. */
export const FENCED_HDEL = defineScript({
  name: 'fencedResource.hdel',
  keys: ['resource', 'fields'],
  args: ['token'],
  rest: 'names',
  lua: `${FENCE}local refused = fence(token)
if refused then return refused end
local removed = 0
for i = namesFrom, #ARGV do removed = removed + redis.call('hdel', fields, ARGV[i]) end
return {1, removed}`,
  parse: fencedReply,
});

/** Reads `{value or false, highest token or '0', fields as a flat list}`; a WRONGTYPE error for another kind. Reads only. */
export const FENCED_READ = defineScript({
  name: 'fencedResource.read',
  keys: ['resource', 'fields'],
  args: [],
  readOnly: true,
  lua: `${WRONG_KIND}local marks = redis.call('hmget', resource, 'kind', 'token', 'value')
if marks[1] ~= 'fenced-resource' and (marks[1] or redis.call('exists', resource) == 1) then return wrongKind(marks[1]) end
return {marks[3] or false, marks[2] or '0', redis.call('hgetall', fields)}`,
  parse: (reply) => {
    const [value, highest, flat] = reply as [string | null | false, string, string[]];
    const fields = new Map<string, string>();
    for (let i = 0; i < flat.length; i += 2) fields.set(String(flat[i]), String(flat[i + 1]));
    return { value: value === null || value === false ? undefined : String(value), highest: BigInt(highest), fields };
  },
});
