import { coreOf, OBJECT_DESCRIPTORS, type LockClient } from '../client.js';
import { auxState, channelsOf, descriptorOf, exists, objectLayout, type KindDescriptor, type ObjectLayout, type ObjectState } from '../descriptor.js';
import { tagged } from '../keys.js';
import type { ObjectKind } from '../kinds.js';
import type { Connection } from '../redis/connection.js';
import { usageError } from './errors.js';
import { snapshot, subscribers, type KeyState, type Snapshot } from './snapshot.js';

export type { ObjectState } from '../descriptor.js';

/** The kinds of relock objects the command tells apart: the library's kinds, one per descriptor. */
export const OBJECT_TYPES: readonly ObjectKind[] = OBJECT_DESCRIPTORS.map((d) => d.kind);

/** One of `OBJECT_TYPES`. */
export type ObjectType = ObjectKind;

/** The descriptor of `type`. */
export const descriptorOfType = (type: ObjectType): KindDescriptor => descriptorOf(OBJECT_DESCRIPTORS, type);

/** Every key and channel relock may keep for one name, as the descriptors lay them out. */
export type ObjectKeys = ObjectLayout;

/**
 * The names of `name`'s keys and channels under the key prefix of `locks`. Unlike `getLock`, it takes names
 * relock no longer accepts (longer than `MAX_NAME_LENGTH`, with control characters), which keys written by
 * another tool or an older relock may hold, so that the CLI can list, inspect and force-unlock them. Throws
 * `CrossSlotError` for braces that no relock name can have.
 */
export function objectKeys(locks: LockClient, name: string): ObjectKeys {
  const { keyPrefix } = coreOf(locks);
  const main = keyPrefix + name;
  tagged(main); // throws CrossSlotError for braces that are not a hash tag
  return objectLayout(OBJECT_DESCRIPTORS, keyPrefix, name, main);
}

/** Reads every key of `keys` in one atomic script run, at most `limit` entries per key. */
async function readState(connection: Connection, keys: ObjectKeys, limit: number): Promise<ObjectState> {
  const parts = [...keys.aux.keys()];
  const snap: Snapshot = await snapshot(connection, [keys.main, ...parts.map((part) => keys.aux.get(part)!)], limit);
  const [main, ...aux] = snap.keys as [KeyState, ...KeyState[]];
  return { keys, now: snap.now, main, aux: new Map(parts.map((part, i) => [part, aux[i]])) };
}

/** What detection found. */
export type Detection =
  | { readonly found: 'object'; readonly type: ObjectType }
  /** No key of the name exists and nobody listens on its channels. */
  | { readonly found: 'nothing' }
  /** The name's key exists but holds data relock did not write. */
  | { readonly found: 'foreign'; readonly reason: string };

/**
 * The object type `state` shows: an existing main key is the kind whose descriptor recognises it (its
 * Redis type, then a hash's `kind` field…); a missing one is resolved by the auxiliary keys that exist and
 * the channels that have subscribers (the descriptor of highest `absent.precedence` that shows), else it
 * is nothing.
 */
function detect(state: ObjectState, subs: ReadonlyMap<string, number> = new Map()): Detection {
  const { main, keys } = state;
  const object = (type: ObjectType): Detection => ({ found: 'object', type });
  if (main.type === 'none') {
    const listened = (channel: string): boolean => (subs.get(channel) ?? 0) > 0;
    const shows = (d: KindDescriptor): boolean =>
      d.absent !== undefined && (d.absent.keys.some((part) => exists(auxState(state, part))) || (d.absent.channels && channelsOf(d, keys).some(listened)));
    const found = OBJECT_DESCRIPTORS.filter(shows).sort((a, b) => b.absent!.precedence - a.absent!.precedence)[0];
    return found ? object(found.kind) : { found: 'nothing' };
  }
  const candidates = OBJECT_DESCRIPTORS.filter((d) => d.redisType === main.type);
  if (candidates.length === 0) return { found: 'foreign', reason: `${main.key} is a Redis ${main.type}, which no relock object uses` };
  const found = [...candidates.filter((d) => !d.fallback), ...candidates.filter((d) => d.fallback)].find((d) => d.recognise(state));
  return found ? object(found.kind) : { found: 'foreign', reason: `${main.key} is a ${candidates[0].foreign}` };
}

/** The channels every kind of object of this name may publish on (fair-lock waiter channels aside). */
export function baseChannels(keys: ObjectKeys): string[] {
  return [...new Set(OBJECT_DESCRIPTORS.flatMap((d) => channelsOf(d, keys)))];
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
  const expected = descriptorOfType(forced).redisType;
  if (state.main.type !== 'none' && state.main.type !== expected) {
    throw usageError(`${state.main.key} is a Redis ${state.main.type}, but a ${forced} keeps a ${expected} there`);
  }
  return { state, subs, detection: { found: 'object', type: forced } };
}

/** A type named on the command line as an `ObjectType` (an alias such as `latch` names its kind). */
export function forcedType(type: string | undefined): ObjectType | undefined {
  return OBJECT_DESCRIPTORS.find((d) => d.aliases?.includes(type ?? ''))?.kind ?? (type as ObjectType | undefined);
}
