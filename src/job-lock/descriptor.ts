import type { KindDescriptor } from '../descriptor.js';
import { hashLockDescriptor } from '../lock/descriptor.js';
import { RJobLock } from './job-lock.js';

/**
 * The lock of `runExclusive` (scheduled jobs): `RLock`'s hash with `kind` = `job-lock`, held while a job
 * runs and left to expire `atLeastMs` after its start. Its channel is `RLock`'s (nobody waits on it).
 */
export const JOB_LOCK_DESCRIPTOR: KindDescriptor = hashLockDescriptor('job-lock', 'job lock (runExclusive)', (core, name) => new RJobLock(core, name), {
  summary: (d) => (d.holders!.length === 0 ? 'not held' : `held (a job runs or its atLeastMs runs out in ${d.ttlMs ?? '?'} ms)`),
});
