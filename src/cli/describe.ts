import type { Connection } from '../redis/connection.js';
import { baseChannels, isLockType, type ObjectState, type ObjectType } from './detect.js';
import { subscribers, type KeyState } from './snapshot.js';

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

/** What `inspect` shows about one object (also its JSON output). Fields apply to the types named. */
export interface Description {
  readonly name: string;
  readonly type: ObjectType;
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

const WRITE_SUFFIX = ':write';

/** The channels of an object type, fair-lock waiter channels aside. */
function channelsOf(state: ObjectState, type: ObjectType): string[] {
  const { lock, readWrite, permits, latch } = state.keys.channels;
  switch (type) {
    case 'lock':
    case 'fenced-lock':
      return [lock];
    case 'spin-lock':
    case 'fair-lock':
      return [];
    case 'read-write-lock':
      return [readWrite];
    case 'semaphore':
    case 'expirable-semaphore':
      return [permits];
    case 'count-down-latch':
      return [latch];
  }
}

/**
 * Describes the object of `state` as `type`: holders, counts, leases and deadlines computed from the
 * snapshot's Redis server time. `subs` holds the subscribers of the base channels; a fair lock's waiter
 * channels are counted here (one more `PUBSUB` call).
 */
export async function describe(connection: Connection, state: ObjectState, type: ObjectType, subs: ReadonlyMap<string, number>): Promise<Description> {
  const { main, keys, now } = state;
  const queue = type === 'fair-lock' ? state.queue.list : [];
  const waiterSubs = await subscribers(connection, queue.map((owner) => keys.waiterChannel(owner)));
  const count = (channel: string): number => subs.get(channel) ?? waiterSubs.get(channel) ?? 0;
  const warnings: string[] = [];
  const truncated = [main, state.queue, state.timeout, state.leases].filter((k) => k.size > shown(k)).map((k) => `${k.key} has ${k.size} entries: ${k.type === 'hash' ? 'a random sample' : 'the first'} ${shown(k)} shown`);
  const isLock = isLockType(type);
  if ((isLock || type === 'expirable-semaphore') && main.pttl === -1) {
    warnings.push(`${main.key} has no TTL: relock always sets one, so something else wrote or changed it; ${isLock ? 'the lock never expires and stays held until its holder unlocks it (or force-unlock)' : 'its permits are never reclaimed by expiry of the key'}`);
  }
  const base = {
    name: keys.name,
    type,
    key: main.key,
    exists: main.type !== 'none',
    ttlMs: main.pttl >= 0 ? main.pttl : null,
    serverTime: now,
  };
  const tail = {
    channels: [...channelsOf(state, type), ...queue.map((owner) => keys.waiterChannel(owner))].map((channel) => ({ channel, subscribers: count(channel) })),
    warnings,
    ...(truncated.length > 0 ? { truncated } : {}),
  };
  return { ...base, ...details(state, type, count), ...tail };
}

/** The fields of `Description` that only `type` has. */
function details(state: ObjectState, type: ObjectType, count: (channel: string) => number): Partial<Description> {
  const { main } = state;
  switch (type) {
    case 'lock':
    case 'spin-lock':
      return { holders: holders(main) };
    case 'fenced-lock':
      return { holders: holders(main), ...(state.fence.value !== undefined ? { fencingToken: state.fence.value } : {}) };
    case 'fair-lock':
      return { holders: holders(main), queue: waiters(state, count) };
    case 'read-write-lock':
      return readWrite(state);
    case 'semaphore':
      return { freePermits: Number(main.value ?? 0) };
    case 'expirable-semaphore':
      return { permits: permits(state) };
    case 'count-down-latch':
      return { count: Math.max(0, Number(main.hash.get('count') ?? 0)) };
  }
}

/** Entries of a hash, sorted set or list the snapshot read. */
function shown(key: KeyState): number {
  if (key.type === 'hash') return key.hash.size;
  if (key.type === 'zset') return key.zset.length;
  return key.type === 'list' ? key.list.length : key.size;
}

/** The owners of a lock hash and their hold counts (every field but `kind`). */
function holders(main: KeyState): Holder[] {
  return [...main.hash].filter(([field]) => field !== 'kind').map(([owner, holds]) => ({ owner, holds: Number(holds) }));
}

function waiters(state: ObjectState, count: (channel: string) => number): Waiter[] {
  const deadlines = new Map(state.timeout.zset.map(({ member, score }) => [member, score]));
  return state.queue.list.map((owner, i) => {
    const deadline = deadlines.get(owner);
    const channel = state.keys.waiterChannel(owner);
    return { owner, position: i + 1, deadlineInMs: deadline === undefined ? null : deadline - state.now, channel, subscribers: count(channel) };
  });
}

function readWrite(state: ObjectState): Pick<Description, 'mode' | 'readers' | 'writer'> {
  const deadlines = new Map(state.leases.zset.map(({ member, score }) => [member, score]));
  const side = (field: string, holds: number): SideHolder => ({
    owner: field.endsWith(WRITE_SUFFIX) ? field.slice(0, -WRITE_SUFFIX.length) : field,
    holds,
    leasesMs: Array.from({ length: holds }, (_, i) => {
      const deadline = deadlines.get(`${field}:${i + 1}`);
      return deadline === undefined ? 0 : deadline - state.now;
    }),
  });
  const fields = [...state.main.hash].filter(([field]) => field !== 'mode');
  const writer = fields.find(([field]) => field.endsWith(WRITE_SUFFIX));
  return {
    mode: state.main.hash.get('mode') ?? null,
    readers: fields.filter(([field]) => !field.endsWith(WRITE_SUFFIX)).map(([field, holds]) => side(field, Number(holds))),
    writer: writer ? side(writer[0], Number(writer[1])) : null,
  };
}

function permits(state: ObjectState): Permits {
  const live = state.main.zset.filter(({ score }) => score > state.now);
  const expired = state.main.zset.length - live.length;
  const total = Number(state.permits.value ?? 0);
  const taken = state.main.size - expired;
  return { total, taken, free: total - taken, expiredNotReclaimed: expired, leases: live.map(({ member, score }) => ({ id: member, remainingMs: score - state.now })) };
}

/** The channels `watch` listens on for an object of this name: every base channel, and the fair-lock waiters' own. */
export function watchedChannels(state: ObjectState): string[] {
  return [...baseChannels(state.keys), ...state.queue.list.map((owner) => state.keys.waiterChannel(owner))];
}
