import { auxState, holders, type KindDescriptor } from '../descriptor.js';
import { hashLockDescriptor } from '../lock/descriptor.js';
import { FencedLock } from './fenced-lock.js';

/** `FencedLock`: `RLock`'s hash and channel with `kind` = `fenced-lock`, and the token counter `relock:fence:{name}` (never deleted). */
export const FENCED_LOCK_DESCRIPTOR: KindDescriptor = hashLockDescriptor('fenced-lock', 'fenced lock (FencedLock)', (core, name) => new FencedLock(core, name), {
  keys: ['fence'],
  absent: { precedence: 60, keys: ['fence'], channels: false },
  details: (state) => {
    const token = auxState(state, 'fence').value;
    return { holders: holders(state.main), ...(token !== undefined ? { fencingToken: token } : {}) };
  },
});
