import type { KindDescriptor } from '../descriptor.js';
import { LOCK_CHANNEL, LOCK_NO_TTL } from '../lock/descriptor.js';
import { RNonReentrantLock } from './non-reentrant-lock.js';

/** An owner id as relock writes it: the client's id (`randomId()`: 16 base64url characters), `:`, the context's (base 36). */
const OWNER_ID = /^[\w-]{16}:[0-9a-z]+$/;

/**
 * `RNonReentrantLock`: a string `keyPrefix + name` holding its owner, channel `relock:channel:{name}`. A
 * string is not marked: one whose value has the shape of a relock owner id (`clientId:contextId`) is taken
 * for a non-reentrant lock, and its value shown as the holder; one held under a caller's `identifier`
 * shows as data relock did not write.
 */
export const NON_REENTRANT_LOCK_DESCRIPTOR: KindDescriptor = {
  kind: 'non-reentrant-lock',
  label: 'non-reentrant lock (NonReentrantLock)',
  redisType: 'string',
  keys: [],
  channels: [LOCK_CHANNEL],
  recognise: (state) => state.main.value !== undefined && OWNER_ID.test(state.main.value),
  foreign: 'string that is neither a relock counter (an integer) nor a relock owner id (a non-reentrant lock)',
  details: (state) => ({ holders: state.main.value === undefined ? [] : [{ owner: state.main.value, holds: 1 }] }),
  summary: (d) => (d.holders!.length === 0 ? 'not held' : `held by ${d.holders![0].owner}`),
  noTtl: LOCK_NO_TTL,
  lock: { forceUnlock: (core, name) => new RNonReentrantLock(core, name).forceUnlock(), deletes: [] },
};
