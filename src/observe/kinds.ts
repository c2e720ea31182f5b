import type { ObjectKind } from '../kinds.js';

/**
 * The kinds of object as metrics and events name them (the `relock.kind` attribute): one per primitive,
 * in OpenTelemetry's snake_case. A read-write lock's two sides are `read_lock` and `write_lock`.
 */
export type MetricKind =
  | 'lock'
  | 'fair_lock'
  | 'read_lock'
  | 'write_lock'
  | 'fenced_lock'
  | 'spin_lock'
  | 'multi_lock'
  | 'red_lock'
  | 'semaphore'
  | 'permit_expirable_semaphore'
  | 'count_down_latch';

/** The metric kind of each measured object kind (one whose calls go through the `Observer`); the read-write lock's sides below. */
const BY_OBJECT_KIND: Readonly<Partial<Record<ObjectKind, MetricKind>>> = Object.freeze({
  lock: 'lock',
  'spin-lock': 'spin_lock',
  'fenced-lock': 'fenced_lock',
  'fair-lock': 'fair_lock',
  semaphore: 'semaphore',
  'expirable-semaphore': 'permit_expirable_semaphore',
  'count-down-latch': 'count_down_latch',
});

/** The `MetricKind` of an object of `kind`; for the read-write lock, `exclusive` tells the write side from the read side. */
export function metricKind(kind: ObjectKind, exclusive: boolean): MetricKind {
  if (kind === 'read-write-lock') return exclusive ? 'write_lock' : 'read_lock';
  const metric = BY_OBJECT_KIND[kind];
  if (metric === undefined) throw new Error(`kind ${kind} has no metric kind (observe/kinds.ts)`);
  return metric;
}

/** How an acquisition call ended (the `relock.outcome` attribute). */
export type AcquireOutcome = 'acquired' | 'timeout' | 'aborted' | 'error';

/** What woke a waiter before its last attempt (`relock.woken_by`): a release message, a timer, or nothing (granted or refused at once). */
export type WokenBy = 'message' | 'timer' | 'none';
