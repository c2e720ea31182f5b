// The names of relock's object kinds: a leaf module (errors.ts names them too, and kinds.ts needs errors.ts).
// It lists no kind itself: each primitive's folder adds its own to `ObjectKinds` (declaration merging,
// next to its class), so a new primitive touches no shared file; the descriptors registered in client.ts
// (`OBJECT_DESCRIPTORS`) are the runtime list.

/**
 * Every kind of relock object, by name (the value is unused: `true`). Each primitive declares its own
 * entry in its folder, beside its class, by merging into this interface:
 *
 * ```text
 * declare module '../object-kind.js' {
 *   interface ObjectKinds {
 *     'count-down-latch': true;
 *   }
 * }
 * ```
 *
 * Read it through `ObjectKind`, the union of its keys.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging, one entry per primitive folder
export interface ObjectKinds {}

/**
 * The kinds of relock object, as `WrongTypeError` and the `relock` command name them: `'lock'`,
 * `'spin-lock'`, `'fenced-lock'`, `'fair-lock'`, `'read-write-lock'`, `'semaphore'`,
 * `'expirable-semaphore'`, `'count-down-latch'` (the keys of `ObjectKinds`). A name serves one
 * kind at a time: every script that takes or changes an object first checks that its key is free or
 * belongs to its own kind, and otherwise fails with `WrongTypeError` without writing anything (two kinds
 * on one name would hand out two holders: an `RLock`'s hash looks free to a read-write lock).
 *
 * How a script tells the kinds apart: first by the Redis type of the main key `keyPrefix + name` (a
 * semaphore keeps a string, an expirable semaphore a sorted set, every other kind a hash), through the
 * first command it runs on the key, which Redis fails with WRONGTYPE on another type before anything is
 * written; then, for hashes, by the `kind` field every relock hash carries (`lock`, `spin-lock`,
 * `fenced-lock`, `fair-lock`, `count-down-latch`), except the read-write lock's, which its `mode` field
 * marks. The field is written with the first hold (in the same `HSET`) and read together with the owner's
 * hold count (`HMGET`), so the check adds no command to an acquisition.
 */
export type ObjectKind = keyof ObjectKinds;

/** The Redis type of an object's main key. */
export type RedisType = 'hash' | 'string' | 'zset';

/** What the library itself needs to know of a kind (its `KindDescriptor` has the rest). */
export interface KindEntry {
  /** The kind's name (`WrongTypeError`, `relock inspect --type`, the `type` of the CLI's JSON). */
  readonly kind: ObjectKind;
  /** The Redis type of its main key `keyPrefix + name`. */
  readonly redisType: RedisType;
}
