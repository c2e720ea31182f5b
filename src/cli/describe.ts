import { auxState, channelsOf, type Description, type KeyState } from '../descriptor.js';
import type { Connection } from '../redis/connection.js';
import { baseChannels, descriptorOfType, type ObjectState, type ObjectType } from './detect.js';
import { subscribers } from './snapshot.js';
import { OBJECT_DESCRIPTORS } from '../client.js';

export type { Description, Holder, Permits, SideHolder, Waiter } from '../descriptor.js';

/**
 * Describes the object of `state` as `type` (its descriptor's `details`): holders, counts, leases and
 * deadlines computed from the snapshot's Redis server time. `subs` holds the subscribers of the base
 * channels; the type's dynamic channels (a fair lock's waiters') are counted here (one more `PUBSUB` call).
 */
export async function describe(connection: Connection, state: ObjectState, type: ObjectType, subs: ReadonlyMap<string, number>): Promise<Description> {
  const { main, keys, now } = state;
  const descriptor = descriptorOfType(type);
  const dynamic = descriptor.dynamicChannels?.(state) ?? [];
  const dynamicSubs = await subscribers(connection, dynamic);
  const count = (channel: string): number => subs.get(channel) ?? dynamicSubs.get(channel) ?? 0;
  const warnings: string[] = [];
  const read = [main, ...descriptor.keys.map((part) => auxState(state, part))];
  const truncated = read.filter((k) => k.size > shown(k)).map((k) => `${k.key} has ${k.size} entries: ${k.type === 'hash' ? 'a random sample' : 'the first'} ${shown(k)} shown`);
  if (descriptor.noTtl !== undefined && main.pttl === -1) {
    warnings.push(`${main.key} has no TTL: relock always sets one, so something else wrote or changed it; ${descriptor.noTtl}`);
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
    channels: [...channelsOf(descriptor, keys), ...dynamic].map((channel) => ({ channel, subscribers: count(channel) })),
    warnings,
    ...(truncated.length > 0 ? { truncated } : {}),
  };
  return { ...base, ...descriptor.details(state, count), ...tail };
}

/** Entries of a hash, sorted set or list the snapshot read. */
function shown(key: KeyState): number {
  if (key.type === 'hash') return key.hash.size;
  if (key.type === 'zset') return key.zset.length;
  return key.type === 'list' ? key.list.length : key.size;
}

/** The channels `watch` listens on for an object of this name: every base channel, and every kind's dynamic ones (fair-lock waiters'). */
export function watchedChannels(state: ObjectState): string[] {
  return [...baseChannels(state.keys), ...OBJECT_DESCRIPTORS.flatMap((d) => d.dynamicChannels?.(state) ?? [])];
}
