import type { Connection } from '../redis/connection.js';
import { Script } from '../redis/script.js';
import type { KeyState } from '../descriptor.js';

export type { KeyState } from '../descriptor.js';

/** The keys of one object, read in one atomic step. */
export interface Snapshot {
  /** Redis server time (`TIME`) in ms when the keys were read: every remaining time is computed from it. */
  readonly now: number;
  readonly keys: readonly KeyState[];
}

/**
 * Reads `KEYS` (all of one object, so of one cluster slot) in one script run, so that what they show is
 * consistent: the server time, then per key `{TYPE, PTTL, size, content}`, where the content of a hash
 * is `HGETALL` (or `HRANDFIELD … WITHVALUES` of ARGV[1] fields when it has more), of a sorted set the first
 * ARGV[1] members with scores, of a list its first ARGV[1] elements, of a string its value when it is
 * at most 64 bytes. Reads only.
 */
const SNAPSHOT = new Script(
  'cli.snapshot',
  `local limit = tonumber(ARGV[1])
local t = redis.call('time')
local out = {t[1], t[2]}
for i = 1, #KEYS do
  local key = KEYS[i]
  local kind = redis.call('type', key)['ok']
  local size, body = 0, {}
  if kind == 'hash' then
    size = redis.call('hlen', key)
    if size <= limit then body = redis.call('hgetall', key) else body = redis.call('hrandfield', key, limit, 'withvalues') end
  elseif kind == 'zset' then
    size = redis.call('zcard', key)
    body = redis.call('zrange', key, 0, limit - 1, 'withscores')
  elseif kind == 'list' then
    size = redis.call('llen', key)
    body = redis.call('lrange', key, 0, limit - 1)
  elseif kind == 'string' then
    size = redis.call('strlen', key)
    if size <= 64 then body = {redis.call('get', key)} end
  end
  out[#out + 1] = {kind, redis.call('pttl', key), size, body}
end
return out`,
);

/**
 * Takes a snapshot of `keys` (the object's main key first: it routes the script on a cluster), reading at
 * most `limit` entries of each. Rejects with the node-redis error when Redis fails.
 */
export async function snapshot(connection: Connection, keys: readonly string[], limit: number): Promise<Snapshot> {
  const reply = (await SNAPSHOT.run(connection, keys, [String(limit)])) as unknown[];
  const now = Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000);
  return { now, keys: keys.map((key, i) => keyState(key, reply[i + 2] as [string, number, number, string[]])) };
}

function keyState(key: string, [type, pttl, size, body]: [string, number, number, string[]]): KeyState {
  const pairs = (): Array<[string, string]> => Array.from({ length: body.length / 2 }, (_, i) => [body[2 * i], body[2 * i + 1]]);
  return {
    key,
    type,
    pttl: Number(pttl),
    size: Number(size),
    hash: new Map(type === 'hash' ? pairs() : []),
    zset: type === 'zset' ? pairs().map(([member, score]) => ({ member, score: Number(score) })) : [],
    list: type === 'list' ? body : [],
    value: type === 'string' ? body[0] : undefined,
  };
}

/**
 * Subscribers of each of `channels` (all of one object's slot; the first routes the command):
 * `PUBSUB NUMSUB`, or `PUBSUB SHARDNUMSUB` where relock publishes with `SPUBLISH` (a cluster).
 */
export async function subscribers(connection: Connection, channels: readonly string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (channels.length === 0) return counts;
  const verb = connection.publishCommand === 'spublish' ? 'SHARDNUMSUB' : 'NUMSUB';
  const reply = await connection.sendKeyless(channels[0], ['PUBSUB', verb, ...channels]);
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) counts.set(String(reply[i]), Number(reply[i + 1]));
  } else {
    for (const [channel, count] of reply instanceof Map ? reply : Object.entries(reply as object)) counts.set(String(channel), Number(count));
  }
  return counts;
}
