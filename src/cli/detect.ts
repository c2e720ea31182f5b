import type { LockClient } from '../client.js';
import { OBJECT_KINDS, REDIS_TYPE, type ObjectKind } from '../kinds.js';
import type { Connection } from '../redis/connection.js';
import { usageError } from './errors.js';
import { snapshot, subscribers, type KeyState, type Snapshot } from './snapshot.js';

/** The kinds of relock objects the command tells apart: the library's `ObjectKind`s. */
export const OBJECT_TYPES = OBJECT_KINDS;

/** One of `OBJECT_TYPES`. */
export type ObjectType = ObjectKind;

/** The lock types (those `force-unlock` applies to). */
export type LockType = 'lock' | 'spin-lock' | 'fenced-lock' | 'fair-lock' | 'read-write-lock';

const LOCK_TYPES: readonly ObjectType[] = ['lock', 'spin-lock', 'fenced-lock', 'fair-lock', 'read-write-lock'];

/** Whether `type` is a lock. */
export const isLockType = (type: ObjectType): type is LockType => LOCK_TYPES.includes(type);

/** Every key and channel relock may keep for one name, as the library names them. */
export interface ObjectKeys {
  readonly name: string;
  /** `keyPrefix + name`: a lock's hash, a semaphore's or latch's counter, an expirable semaphore's permits. */
  readonly main: string;
  /** `relock:fence:{name}`: a fenced lock's token counter. */
  readonly fence: string;
  /** `relock:queue:{name}`: a fair lock's waiters. */
  readonly queue: string;
  /** `relock:timeout:{name}`: a fair lock's waiter deadlines. */
  readonly timeout: string;
  /** `relock:leases:{name}`: a read-write lock's hold leases. */
  readonly leases: string;
  /** `relock:permits:{name}`: an expirable semaphore's number of permits. */
  readonly permits: string;
  /** The channels of each kind of object: `lock` (RLock, fenced), `readWrite`, `permits` (both semaphores), `latch`. */
  readonly channels: { readonly lock: string; readonly readWrite: string; readonly permits: string; readonly latch: string };
  /** A fair-lock waiter's own channel. */
  waiterChannel(owner: string): string;
}

/** The names of `name`'s keys and channels, taken from the library's own objects (so they never drift). */
export function objectKeys(locks: LockClient, name: string): ObjectKeys {
  const fenced = locks.getFencedLock(name);
  const fair = locks.getFairLock(name);
  const readWrite = locks.getReadWriteLock(name).readLock();
  const expirable = locks.getPermitExpirableSemaphore(name);
  return {
    name,
    main: fenced.key,
    fence: fenced.fenceKey,
    queue: fair.queueKey,
    timeout: fair.timeoutKey,
    leases: readWrite.leasesKey,
    permits: expirable.permitsKey,
    channels: { lock: fenced.channel, readWrite: readWrite.channel, permits: expirable.channel, latch: locks.getCountDownLatch(name).channel },
    waiterChannel: (owner) => fair.waiterChannel(owner),
  };
}

/** An object's keys as one snapshot read them. */
export interface ObjectState {
  readonly keys: ObjectKeys;
  /** Redis server time (ms) of the read. */
  readonly now: number;
  readonly main: KeyState;
  readonly fence: KeyState;
  readonly queue: KeyState;
  readonly timeout: KeyState;
  readonly leases: KeyState;
  readonly permits: KeyState;
}

/** Reads every key of `keys` in one atomic script run, at most `limit` entries per key. */
async function readState(connection: Connection, keys: ObjectKeys, limit: number): Promise<ObjectState> {
  const snap: Snapshot = await snapshot(connection, [keys.main, keys.fence, keys.queue, keys.timeout, keys.leases, keys.permits], limit);
  const [main, fence, queue, timeout, leases, permits] = snap.keys as [KeyState, KeyState, KeyState, KeyState, KeyState, KeyState];
  return { keys, now: snap.now, main, fence, queue, timeout, leases, permits };
}

/** What detection found. */
export type Detection =
  | { readonly found: 'object'; readonly type: ObjectType }
  /** No key of the name exists and nobody listens on its channels. */
  | { readonly found: 'nothing' }
  /** The name's key exists but holds data relock did not write. */
  | { readonly found: 'foreign'; readonly reason: string };

/** The kinds whose hash carries a `kind` field (a read-write lock's has `mode` instead). */
const MARKED_KINDS: readonly ObjectType[] = ['lock', 'spin-lock', 'fenced-lock', 'fair-lock', 'count-down-latch'];
/** A permit id `clientId-n` (`clientId-n:i` when several were taken at once). */
const PERMIT_ID = /^[\w-]+-[0-9a-z]+(:\d+)?$/;
const INTEGER = /^-?\d+$/;

const exists = (key: KeyState): boolean => key.type !== 'none';

/**
 * The object type `state` shows: a hash's `kind` field (or `mode` for a read-write lock), a counter
 * string is a semaphore, a sorted set of permit ids an expirable semaphore. A missing main key is
 * resolved by the auxiliary keys that exist and the channels that have subscribers, else it is nothing.
 */
function detect(state: ObjectState, subs: ReadonlyMap<string, number> = new Map()): Detection {
  const { main, keys } = state;
  const listened = (channel: string): boolean => (subs.get(channel) ?? 0) > 0;
  const object = (type: ObjectType): Detection => ({ found: 'object', type });
  switch (main.type) {
    case 'hash': {
      const kind = main.hash.get('kind') as ObjectType | undefined;
      if (kind !== undefined && MARKED_KINDS.includes(kind)) return object(kind);
      if (main.hash.has('mode') || exists(state.leases)) return object('read-write-lock');
      return { found: 'foreign', reason: `${main.key} is a hash without the kind field every relock hash has` };
    }
    case 'zset':
      if (exists(state.permits) || main.zset.every(({ member }) => PERMIT_ID.test(member))) return object('expirable-semaphore');
      return { found: 'foreign', reason: `${main.key} is a sorted set whose members are not relock permit ids` };
    case 'string': {
      if (main.value === undefined || !INTEGER.test(main.value)) return { found: 'foreign', reason: `${main.key} is a string that is not a relock counter (an integer)` };
      return object('semaphore');
    }
    case 'none':
      if (exists(state.permits)) return object('expirable-semaphore');
      if (exists(state.fence)) return object('fenced-lock');
      if (exists(state.queue) || exists(state.timeout)) return object('fair-lock');
      if (exists(state.leases) || listened(keys.channels.readWrite)) return object('read-write-lock');
      if (listened(keys.channels.lock)) return object('lock');
      if (listened(keys.channels.permits)) return object('semaphore');
      if (listened(keys.channels.latch)) return object('count-down-latch');
      return { found: 'nothing' };
    default:
      return { found: 'foreign', reason: `${main.key} is a Redis ${main.type}, which no relock object uses` };
  }
}

/** The channels every kind of object of this name may publish on (fair-lock waiter channels aside). */
export function baseChannels(keys: ObjectKeys): string[] {
  const { lock, readWrite, permits, latch } = keys.channels;
  return [lock, readWrite, permits, latch];
}

/**
 * Reads the object `name` and finds its type: `forced` (from `--type`) when given, after checking that
 * the main key's Redis type fits it (else a usage error). `own` counts this process's own subscriptions
 * per channel (`watch`), which are not counted as waiters. Resolves to the state, the subscribers of the
 * base channels and the detection.
 */
export async function inspectObject(
  connection: Connection,
  keys: ObjectKeys,
  limit: number,
  forced: ObjectType | undefined,
  own: ReadonlyMap<string, number> = new Map(),
): Promise<{ state: ObjectState; subs: Map<string, number>; detection: Detection }> {
  const [state, counts] = await Promise.all([readState(connection, keys, limit), subscribers(connection, baseChannels(keys))]);
  const subs = new Map([...counts].map(([channel, n]) => [channel, Math.max(0, n - (own.get(channel) ?? 0))]));
  if (forced === undefined) return { state, subs, detection: detect(state, subs) };
  if (state.main.type !== 'none' && state.main.type !== REDIS_TYPE[forced]) {
    throw usageError(`${state.main.key} is a Redis ${state.main.type}, but a ${forced} keeps a ${REDIS_TYPE[forced]} there`);
  }
  return { state, subs, detection: { found: 'object', type: forced } };
}

/** A type named on the command line as an `ObjectType` (`latch` is short for `count-down-latch`). */
export function forcedType(type: string | undefined): ObjectType | undefined {
  return type === 'latch' ? 'count-down-latch' : (type as ObjectType | undefined);
}
