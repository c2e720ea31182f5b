import type { KindDescriptor } from '../descriptor.js';
import { hashLockDescriptor } from '../lock/descriptor.js';
import { SpinLock } from './spin-lock.js';

/** `SpinLock`: `RLock`'s hash with `kind` = `spin-lock`; it publishes nothing, so it has no channel. */
export const SPIN_LOCK_DESCRIPTOR: KindDescriptor = hashLockDescriptor('spin-lock', 'spin lock (SpinLock)', (core, name) => new SpinLock(core, name), { channels: [] });
