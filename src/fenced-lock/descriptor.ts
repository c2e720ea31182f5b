import { auxState, holders, type KindDescriptor } from '../descriptor.js';
import { hashLockDescriptor } from '../lock/descriptor.js';
import { RFencedLock } from './fenced-lock.js';

/** `RFencedLock`: `RLock`'s hash and channel with `kind` = `fenced-lock`, and the token counter `relock:fence:{name}` (never deleted). */
export const FENCED_LOCK_DESCRIPTOR: KindDescriptor = hashLockDescriptor('fenced-lock', 'fenced lock (FencedLock)', (core, name) => new RFencedLock(core, name), {
  keys: ['fence'],
  absent: { precedence: 60, keys: ['fence'], channels: false },
  details: (state) => {
    const token = auxState(state, 'fence').value;
    return { holders: holders(state.main), ...(token !== undefined ? { fencingToken: token } : {}) };
  },
});
