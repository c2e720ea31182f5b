// The former names of the primitive classes, kept as deprecated aliases: every exported primitive class
// now carries Redisson's `R` prefix (`RLock`, `RFencedLock`, `RSpinLock`, `RMultiLock`, `RRedLock`, …).
import { RFencedLock } from './fenced-lock/fenced-lock.js';
import { RMultiLock } from './multi-lock/multi-lock.js';
import { RRedLock } from './red-lock/red-lock.js';
import { RSpinLock } from './spin-lock/spin-lock.js';

/** @deprecated Use `RFencedLock` (the same class, renamed for Redisson's `R` prefix). */
export const FencedLock = RFencedLock;
/** @deprecated Use `RFencedLock`. */
export type FencedLock = RFencedLock;

/** @deprecated Use `RSpinLock` (the same class, renamed for Redisson's `R` prefix). */
export const SpinLock = RSpinLock;
/** @deprecated Use `RSpinLock`. */
export type SpinLock = RSpinLock;

/** @deprecated Use `RMultiLock` (the same class, renamed for Redisson's `R` prefix). */
export const MultiLock = RMultiLock;
/** @deprecated Use `RMultiLock`. */
export type MultiLock = RMultiLock;

/** @deprecated Use `RRedLock` (the same class, renamed for Redisson's `R` prefix). */
export const RedLock = RRedLock;
/** @deprecated Use `RRedLock`. */
export type RedLock = RRedLock;
