import { WrongTypeError } from './errors.js';
import type { Connection } from './redis/connection.js';
import { defineScript } from './redis/script.js';

export type { KindEntry, ObjectKind, ObjectKinds, RedisType } from './object-kind.js';
import type { KindEntry, ObjectKind, RedisType } from './object-kind.js';

/** The Redis type of the main key of `kind`, as its entry in `kinds` (the client's descriptors) says. */
export function redisTypeOf(kinds: readonly KindEntry[], kind: ObjectKind): RedisType {
  const entry = kinds.find((k) => k.kind === kind);
  if (!entry) throw new Error(`no descriptor for kind ${kind}`);
  return entry.redisType;
}

/** The hash field that names the kind of a relock hash (not in a read-write lock's: its `mode` marks it). */
export const KIND_FIELD = 'kind';

/**
 * Lua: `wrongKind(found)`, the error reply of a script that found KEYS[1], an existing hash, to belong to
 * another kind: `found` is the hash's `kind` field (`nil`/false when it has none: then a `mode` field
 * means a read-write lock, else the hash is not relock's). The reply reads `WRONGTYPE relock:<kind>`
 * (`relock:hash` for a foreign hash); `wrongTypeError` turns it into a `WrongTypeError`.
 */
export const WRONG_KIND = `local function wrongKind(found)
  if not found then found = redis.call('hexists', KEYS[1], 'mode') == 1 and 'read-write-lock' or 'hash' end
  return redis.error_reply('WRONGTYPE relock:' .. found)
end
`;

/**
 * Lua: `kindOf(key)`, what `key` holds: its Redis type (`TYPE`) and the relock kind its content shows
 * ('' when none: data relock did not write). A hash by its `kind` field (or `mode`: a read-write lock), a
 * string when it is an integer of at most 20 characters (a semaphore's permit count), any sorted set (an
 * expirable semaphore's permits). Reads only.
 */
const KIND_OF = `local function kindOf(key)
  local t = redis.call('type', key)['ok']
  if t == 'hash' then
    local marks = redis.call('hmget', key, 'kind', 'mode')
    return t, marks[1] or (marks[2] and 'read-write-lock') or ''
  end
  if t == 'string' then
    local ok = redis.call('strlen', key) <= 20 and string.match(redis.call('get', key), '^%-?%d+$')
    return t, ok and 'semaphore' or ''
  end
  if t == 'zset' then return t, 'expirable-semaphore' end
  return t, ''
end
`;

/**
 * Lua: `otherKind(key, kind)`, nil when `key` is free or holds an object of `kind` (see `kindOf`), else the
 * error reply `WRONGTYPE relock:<the kind found, or the Redis type of data relock did not write>` (return
 * it), which `wrongTypeError` reads.
 */
export const OTHER_KIND = `${KIND_OF}local function otherKind(key, kind)
  local t, found = kindOf(key)
  if t ~= 'none' and found ~= kind then return redis.error_reply('WRONGTYPE relock:' .. (found ~= '' and found or t)) end
end
`;

/**
 * Reads what a key holds, for the error of a command Redis itself refused with WRONGTYPE: `{TYPE, kind}`
 * (see `kindOf`). Reads only.
 */
const READ_KIND = defineScript({
  name: 'kind.read',
  keys: ['key'],
  args: [],
  readOnly: true,
  lua: `${KIND_OF}local t, kind = kindOf(key)
return {t, kind}`,
  parse: (reply): [type: string, kind: string] => {
    const [type, kind] = reply as [unknown, unknown];
    return [String(type), String(kind)];
  },
});

/**
 * Runs the read-only `command` (its words from ARGV) after checking that `key` is free or holds an object
 * of `kind` (see `kindOf`); else a `WRONGTYPE relock:<kind found, or the Redis type of foreign data>`
 * error reply, read by `wrongTypeError`. The reads of relock objects (`isLocked`, `availablePermits`,
 * `isExists`, …) go through it, so that a read on another kind's key, or on other data, throws
 * `WrongTypeError` instead of answering about data that is not the object's (an `EXISTS` would call a
 * semaphore's key a held lock). A `no-writes` script (`FCALL_RO` in functions mode).
 */
const CHECKED_READ = defineScript({
  name: 'kind.checkedRead',
  keys: ['key'],
  args: ['kind'],
  rest: 'command',
  readOnly: true,
  lua: `${OTHER_KIND}local refused = otherKind(key, kind)
if refused then return refused end
return redis.call(unpack(ARGV, commandFrom))`,
  parse: (reply) => reply,
});

/**
 * Sends `command`, a read of `expects.key` (`['EXISTS', key]`, `['GET', key]`, …), in one script that
 * first checks that the key is free or holds an object of `expects.kind` (see `CHECKED_READ`); resolves
 * to the command's raw reply. A key of another kind or other data rejects with a WRONGTYPE error reply,
 * which `Executor.run` (given the same `expects`) turns into a `WrongTypeError`.
 */
export function checkedRead(connection: Connection, expects: { readonly key: string; readonly kind: ObjectKind }, command: readonly string[]): Promise<unknown> {
  return CHECKED_READ.run(connection, { key: expects.key, kind: expects.kind, command });
}

const FOUND_BY_SCRIPT = /^WRONGTYPE relock:([\w-]+)/;

const asKind = (kinds: readonly KindEntry[], value: string): ObjectKind | undefined => kinds.find((k) => k.kind === value)?.kind;

/**
 * The `WrongTypeError` for a WRONGTYPE reply `error` to a command on `key` by an object of kind `asked`:
 * the kind a relock script named in its reply, or else what the key holds now (one read-only script;
 * 'unknown' when that read fails too). `kinds`: every kind (the client's descriptors).
 */
export async function wrongTypeError(connection: Connection, kinds: readonly KindEntry[], error: unknown, key: string, asked: ObjectKind): Promise<WrongTypeError> {
  const expected = redisTypeOf(kinds, asked);
  const named = FOUND_BY_SCRIPT.exec((error as Error | undefined)?.message ?? '');
  if (named) {
    // A relock kind, or the Redis type of data relock did not write ('hash': a hash without a kind field).
    const foundKind = asKind(kinds, named[1]);
    return new WrongTypeError(key, foundKind === undefined ? named[1] : redisTypeOf(kinds, foundKind), expected, { cause: error, foundKind, askedKind: asked });
  }
  const [type, kind] = (await READ_KIND.run(connection, { key }).catch(() => undefined)) ?? ['unknown', ''];
  return new WrongTypeError(key, type, expected, { cause: error, foundKind: asKind(kinds, kind), askedKind: asked });
}
