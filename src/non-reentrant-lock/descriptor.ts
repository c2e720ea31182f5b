import type { KindDescriptor } from '../descriptor.js';
import { LOCK_CHANNEL, LOCK_NO_TTL } from '../lock/descriptor.js';
import { RNonReentrantLock } from './non-reentrant-lock.js';

/** A semaphore's counter: an integer string is never a non-reentrant lock's owner. */
const INTEGER = /^-?\d+$/;

/**
 * `RNonReentrantLock`: a string `keyPrefix + name` holding its owner, channel `relock:channel:{name}`. A
 * string is not marked: one that is not an integer (a semaphore's counter) and is at most 64 bytes (the
 * snapshot's limit) is taken for a non-reentrant lock, and its value shown as the holder.
 */
export const NON_REENTRANT_LOCK_DESCRIPTOR: KindDescriptor = {
  kind: 'non-reentrant-lock',
  label: 'non-reentrant lock (NonReentrantLock)',
  redisType: 'string',
  keys: [],
  channels: [LOCK_CHANNEL],
  recognise: (state) => state.main.value !== undefined && !INTEGER.test(state.main.value),
  foreign: 'string longer than 64 bytes (no relock counter or lock owner)',
  details: (state) => ({ holders: state.main.value === undefined ? [] : [{ owner: state.main.value, holds: 1 }] }),
  summary: (d) => (d.holders!.length === 0 ? 'not held' : `held by ${d.holders![0].owner}`),
  noTtl: LOCK_NO_TTL,
  lock: { forceUnlock: (core, name) => new RNonReentrantLock(core, name).forceUnlock(), deletes: [] },
};
