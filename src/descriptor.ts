// What one kind of relock object is, as data: every primitive's folder has a `descriptor.ts` with one
// `KindDescriptor`, `client.ts` lists them (`OBJECT_DESCRIPTORS`), and what works on every kind (the kind
// check of `kinds.ts`, `ObjectKeys`, the `relock` command) iterates that list instead of naming kinds.
// A leaf: types, and helpers that read a snapshot.
import type { Core } from './core.js';
import { auxName } from './keys.js';
import type { KindEntry, ObjectKind } from './object-kind.js';

/** What one key held when a snapshot was taken (`relock inspect` reads every key of an object at once). */
export interface KeyState {
  readonly key: string;
  /** `TYPE` of the key: `'none'` when it does not exist. */
  readonly type: string;
  /** `PTTL` in ms: -1 when the key has no expiry, -2 when it does not exist. */
  readonly pttl: number;
  /** Entries in the key (`HLEN`, `ZCARD`, `LLEN`), or the length of a string. */
  readonly size: number;
  /** A hash's fields and values (all of them, or a random `limit` when there are more). */
  readonly hash: ReadonlyMap<string, string>;
  /** A sorted set's first `limit` members, lowest score first, with their scores. */
  readonly zset: ReadonlyArray<{ readonly member: string; readonly score: number }>;
  /** A list's first `limit` elements. */
  readonly list: readonly string[];
  /** A string's value (`undefined` when it is longer than 64 bytes: then it is no relock counter). */
  readonly value: string | undefined;
}

/** A channel of an object: `auxName(keyPrefix, part, mainKey, suffix)` (`['channel', 'permits']` → `relock:channel:{name}:permits`). */
export type ChannelPart = readonly [part: string, suffix?: string];

/** Every key and channel name relock may use for one object name, whatever its kind. */
export interface ObjectLayout {
  readonly name: string;
  /** `keyPrefix + name`: a lock's hash, a semaphore's or latch's counter, an expirable semaphore's permits. */
  readonly main: string;
  /** Each auxiliary key by its part (`fence` → `relock:fence:{name}`), for the parts of every descriptor. */
  readonly aux: ReadonlyMap<string, string>;
  /** The name of the channel `part`. */
  channel(part: ChannelPart): string;
}

/** An object's keys as one snapshot read them. */
export interface ObjectState {
  readonly keys: ObjectLayout;
  /** Redis server time (ms) of the read. */
  readonly now: number;
  readonly main: KeyState;
  /** Each auxiliary key of `keys.aux`, by part. */
  readonly aux: ReadonlyMap<string, KeyState>;
}

/** A lock owner (`clientId:contextId`) and its hold count. */
export interface Holder {
  readonly owner: string;
  readonly holds: number;
}

/** A read-write lock owner: its holds on one side and each hold's remaining lease (ms; <= 0: expired). */
export interface SideHolder extends Holder {
  readonly leasesMs: number[];
}

/** A fair-lock waiter, head of the queue first. */
export interface Waiter {
  readonly owner: string;
  readonly position: number;
  /** Ms until the waiter counts as dead unless it retries (its deadline minus Redis server time). */
  readonly deadlineInMs: number | null;
  readonly channel: string;
  readonly subscribers: number;
}

/** An expirable semaphore's permits. */
export interface Permits {
  /** The number of permits (`relock:permits:{name}`; 0 when unset). */
  readonly total: number;
  /** Permits held now (lease not over). */
  readonly taken: number;
  /** `total - taken` (negative after the total was lowered below what is held). */
  readonly free: number;
  /** Permits whose lease ended but that no script has reclaimed yet (they count as free). */
  readonly expiredNotReclaimed: number;
  /** The held permits, soonest expiry first, with the ms left on their lease (from Redis server time). */
  readonly leases: Array<{ readonly id: string; readonly remainingMs: number }>;
}

/** What `relock inspect` shows about one object (also its JSON output). Fields apply to the types named. */
export interface Description {
  readonly name: string;
  readonly type: ObjectKind;
  /** The main key (`keyPrefix + name`). */
  readonly key: string;
  /** Whether the main key exists (a lock is held, a latch is counting, permits are taken…). */
  readonly exists: boolean;
  /** `PTTL` of the main key in ms; `null` when it has no expiry or does not exist. */
  readonly ttlMs: number | null;
  /** Redis server time (ms since the epoch) at which everything was read. */
  readonly serverTime: number;
  /** Locks: the owners and their hold counts (read-write locks list `readers` and `writer` instead). */
  readonly holders?: Holder[];
  /** Fenced locks: the last fencing token handed out (a string: it may exceed 2^53). */
  readonly fencingToken?: string;
  /** Leader elections: who leads (identity, term, ms left on its lease), or `null` when nobody does. */
  readonly leader?: { readonly identity: string; readonly term: string; readonly remainingMs: number } | null;
  /** Leader elections: the last term handed out (a string: it may exceed 2^53). */
  readonly term?: string;
  /** Fair locks: the waiters. */
  readonly queue?: Waiter[];
  /** Read-write locks: `read`, `write`, or `null` when free. */
  readonly mode?: string | null;
  readonly readers?: SideHolder[];
  readonly writer?: SideHolder | null;
  /** Semaphores: free permits (what the counter holds; it knows no total). */
  readonly freePermits?: number;
  /** Expirable semaphores. */
  readonly permits?: Permits;
  /** Count-down latches: the count (0: open). */
  readonly count?: number;
  /** The object's channels and their subscribers (waiting processes, and `watch`es). */
  readonly channels: Array<{ readonly channel: string; readonly subscribers: number }>;
  /** Entries not shown because a key had more than `--limit` of them. */
  readonly truncated?: string[];
  /** Things an operator should act on, such as a lock without TTL. */
  readonly warnings: string[];
}

/** Subscribers of a channel, as the snapshot counted them. */
export type SubscriberCount = (channel: string) => number;

/**
 * One kind of relock object, as everything that handles every kind sees it: its Redis layout, how to
 * recognise it from its keys, how to describe it, and (for a lock) how to force-unlock it. One constant
 * per primitive folder (`src/<primitive>/descriptor.ts`), listed in `OBJECT_DESCRIPTORS` (client.ts).
 */
export interface KindDescriptor extends KindEntry {
  /** Other names `--type` accepts for it (`latch`). */
  readonly aliases?: readonly string[];
  /** How text output names the kind, with its class: `lock (RLock)`. */
  readonly label: string;
  /** Its auxiliary keys, by part (`fence` → `relock:fence:{name}`); the snapshot reads them with the main key. */
  readonly keys: readonly string[];
  /** The channels it publishes on (fair-lock waiter channels aside: `dynamicChannels`). */
  readonly channels: readonly ChannelPart[];
  /** Channels that depend on the state (a fair lock's waiters' own), counted and watched too. */
  dynamicChannels?(state: ObjectState): string[];
  /** Whether an existing main key of `redisType` is this kind's (the `kind` field of a hash…). */
  recognise(state: ObjectState): boolean;
  /** `recognise` guesses without a mark of its own (a read-write lock's hash has no `kind` field): tried after the others. */
  readonly fallback?: boolean;
  /** Why an existing main key of `redisType` that no descriptor recognises is foreign data (after "`<key>` is a …"). */
  readonly foreign: string;
  /**
   * How to tell the kind when its main key does not exist: from its auxiliary `keys` that exist, or (when
   * `channels` is true) from subscribers on its channels. When several kinds show, the highest
   * `precedence` wins. Absent: never recognised without its main key.
   */
  readonly absent?: { readonly precedence: number; readonly keys: readonly string[]; readonly channels: boolean };
  /** The fields of `Description` the kind has. */
  details(state: ObjectState, subscribers: SubscriberCount): Partial<Description>;
  /** A short account of the state for `relock list` (`held by 1 owner`, `3 free permits`). */
  summary(description: Description): string;
  /** What a main key without TTL means (relock always sets one for this kind): the warning's end. */
  readonly noTtl?: string;
  /** Locks: what `relock force-unlock` does. */
  readonly lock?: {
    /** Deletes the lock whoever holds it (the library's `forceUnlock`); resolves to whether it was deleted. */
    forceUnlock(core: Core, name: string, description: Description): Promise<boolean>;
    /** The auxiliary keys (parts) `forceUnlock` deletes besides the main key. */
    readonly deletes: readonly string[];
  };
}

/** The hash of a lock's main key without the `kind` field every relock hash has. */
export const FOREIGN_HASH = 'hash without the kind field every relock hash has';

/** A key that does not exist (what a snapshot reports for it). */
const NONE: Omit<KeyState, 'key'> = { type: 'none', pttl: -2, size: 0, hash: new Map(), zset: [], list: [], value: undefined };

/** The state of the auxiliary key `part` (a key that does not exist when the snapshot did not read it). */
export function auxState(state: ObjectState, part: string): KeyState {
  return state.aux.get(part) ?? { key: state.keys.aux.get(part) ?? '', ...NONE };
}

/** The key and channel names of `name` under `keyPrefix` for every kind of `descriptors` (throws as `mainKey`). */
export function objectLayout(descriptors: readonly KindDescriptor[], keyPrefix: string, name: string, main: string): ObjectLayout {
  const parts = [...new Set(descriptors.flatMap((d) => d.keys))];
  return {
    name,
    main,
    aux: new Map(parts.map((part) => [part, auxName(keyPrefix, part, main)])),
    channel: ([part, suffix]) => auxName(keyPrefix, part, main, suffix),
  };
}

/** The channels of kind `descriptor` for the object of `layout` (dynamic ones aside). */
export const channelsOf = (descriptor: KindDescriptor, layout: ObjectLayout): string[] => descriptor.channels.map((part) => layout.channel(part));

/** The descriptor of `kind` in `descriptors`; throws (a bug) when there is none. */
export function descriptorOf(descriptors: readonly KindDescriptor[], kind: ObjectKind): KindDescriptor {
  const found = descriptors.find((d) => d.kind === kind);
  if (!found) throw new Error(`no descriptor for kind ${kind}`);
  return found;
}

/** The owners of a lock hash and their hold counts (every field but `kind`). */
export function holders(main: KeyState): Holder[] {
  return [...main.hash].filter(([field]) => field !== 'kind').map(([owner, holds]) => ({ owner, holds: Number(holds) }));
}

/** `held by 2 owners`, or `not held`. */
export const ownersText = (n: number): string => (n === 0 ? 'not held' : `held by ${n} owner${n === 1 ? '' : 's'}`);

/** Whether the hash `main`'s `kind` field names `kind`. */
export const markedAs = (main: KeyState, kind: ObjectKind): boolean => main.hash.get('kind') === kind;

/** Whether the key exists. */
export const exists = (key: KeyState): boolean => key.type !== 'none';
