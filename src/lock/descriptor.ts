import type { Core } from '../core.js';
import { FOREIGN_HASH, holders, markedAs, ownersText, type ChannelPart, type KindDescriptor } from '../descriptor.js';
import type { ObjectKind } from '../object-kind.js';
import { RLock } from './lock.js';

/** The channel an `RLock` (and a fenced lock) publishes its unlocks on: `relock:channel:{name}`. */
export const LOCK_CHANNEL: ChannelPart = ['channel'];

/** The warning's end for a lock whose key has no TTL. */
export const LOCK_NO_TTL = 'the lock never expires and stays held until its holder unlocks it (or force-unlock)';

/**
 * The descriptor of a hash lock marked `kind` (RLock and its variants): holders from the hash, the
 * lock's `forceUnlock`; `overrides` changes what the variant does otherwise.
 */
export function hashLockDescriptor(kind: ObjectKind, label: string, open: (core: Core, name: string) => RLock, overrides: Partial<KindDescriptor> = {}): KindDescriptor {
  return {
    kind,
    label,
    redisType: 'hash',
    keys: [],
    channels: [LOCK_CHANNEL],
    recognise: (state) => markedAs(state.main, kind),
    foreign: FOREIGN_HASH,
    details: (state) => ({ holders: holders(state.main) }),
    summary: (d) => ownersText(d.holders!.length) + (d.fencingToken !== undefined ? `, last token ${d.fencingToken}` : ''),
    noTtl: LOCK_NO_TTL,
    lock: { forceUnlock: (core, name) => open(core, name).forceUnlock(), deletes: [] },
    ...overrides,
  };
}

/** `RLock`: a hash `keyPrefix + name` of owner → hold count (`kind` = `lock`), channel `relock:channel:{name}`. */
export const LOCK_DESCRIPTOR: KindDescriptor = hashLockDescriptor('lock', 'lock (RLock)', (core, name) => new RLock(core, name), {
  absent: { precedence: 30, keys: [], channels: true },
});
