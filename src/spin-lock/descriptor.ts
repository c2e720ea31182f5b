import type { KindDescriptor } from '../descriptor.js';
import { hashLockDescriptor } from '../lock/descriptor.js';
import { RSpinLock } from './spin-lock.js';

/** `RSpinLock`: `RLock`'s hash with `kind` = `spin-lock`; it publishes nothing, so it has no channel. */
export const SPIN_LOCK_DESCRIPTOR: KindDescriptor = hashLockDescriptor('spin-lock', 'spin lock (SpinLock)', (core, name) => new RSpinLock(core, name), { channels: [] });
