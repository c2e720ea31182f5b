/**
 * The lock variants the contract suite (test/contract/lock-contract.ts) runs against: one line each.
 * A new variant joins by adding its line.
 */
import type { LockClient, ObjectKind, RLock } from '../../src/index.js';

export interface LockVariant {
  /** How the tests name it. */
  readonly name: string;
  /** Its kind, as `WrongTypeError` names it. */
  readonly kind: ObjectKind;
  /** The object of this variant for `name` on `client`. */
  of(client: LockClient, name: string): RLock;
  /** An object whose holder excludes this variant's (default: `of`); the read lock's is the write lock. */
  rival?(client: LockClient, name: string): RLock;
  /** Several owners may hold it at once (the read lock): the exclusion checks do not apply. */
  readonly shared?: boolean;
  /** It waits by polling and its unlock publishes nothing (the spin lock): no wake-up by message. */
  readonly polls?: boolean;
  /**
   * Not reentrant, and its key a plain string holding the owner (the non-reentrant lock): a second
   * acquisition by the holding context waits like any other owner, an attempt is a `SET` (no script), and a
   * string of other data reads as another owner's hold.
   */
  readonly plain?: boolean;
}

export const VARIANTS: readonly LockVariant[] = [
  { name: 'RLock', kind: 'lock', of: (c, n) => c.getLock(n) },
  { name: 'FencedLock', kind: 'fenced-lock', of: (c, n) => c.getFencedLock(n) },
  { name: 'RFairLock', kind: 'fair-lock', of: (c, n) => c.getFairLock(n) },
  { name: 'NonReentrantLock', kind: 'non-reentrant-lock', of: (c, n) => c.getNonReentrantLock(n), plain: true },
  { name: 'SpinLock', kind: 'spin-lock', of: (c, n) => c.getSpinLock(n), polls: true },
  { name: 'RWriteLock', kind: 'read-write-lock', of: (c, n) => c.getReadWriteLock(n).writeLock() },
  { name: 'RReadLock', kind: 'read-write-lock', of: (c, n) => c.getReadWriteLock(n).readLock(), rival: (c, n) => c.getReadWriteLock(n).writeLock(), shared: true },
];
