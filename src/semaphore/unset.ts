import type { Core } from '../core.js';
import type { Take } from './permits.js';

/**
 * The hint for a semaphore whose permits were never set: an acquisition on it waits until some process
 * sets them (`trySetPermits`, `addPermits`, `release`, `setPermits`), as in Redisson, which is right when
 * the initializer starts after the waiters, but looks like a hang when nobody ever sets them. So the
 * first attempt that finds the semaphore's key missing logs a warning through the client's logger, once
 * per client and name; the wait goes on. (Not an error: a process that starts waiting before the one that
 * sets the permits is a normal start-up order, and refusing it would break it.)
 */

/** The most names remembered per client; beyond it, further names are warned about again after a reset. */
const MAX_REMEMBERED = 1000;

/** Names already warned about, per client. */
const warned = new WeakMap<Core, Set<string>>();

/**
 * Logs (warn) once per client and `name` that an attempt on the semaphore `name` of `kind` found its
 * permits never set (`take.unset`); does nothing for any other answer.
 */
export function warnIfUnset(core: Core, kind: 'semaphore' | 'expirable-semaphore', name: string, take: Take): void {
  if (take === true || !take.unset) return;
  let names = warned.get(core);
  if (!names) warned.set(core, (names = new Set()));
  if (names.has(name)) return;
  if (names.size >= MAX_REMEMBERED) names.clear();
  names.add(name);
  const set = kind === 'semaphore' ? 'trySetPermits(), addPermits() or release()' : 'trySetPermits(), setPermits() or addPermits()';
  core.log.warn({ [kind === 'semaphore' ? 'semaphore' : 'expirableSemaphore']: name }, `${kind} "${name}" has no permits: they were never set (or it was deleted or expired); acquisitions wait until ${set} sets them`);
}
