/**
 * The kinds of object as metrics and events name them, by name (the value is unused: `true`). Each
 * primitive folder declares its own beside its class, by declaration merging
 * (`declare module '../observe/kinds.js' { interface MetricKinds { count_down_latch: true } }`), so a new
 * primitive touches no shared list. Read it through `MetricKind`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging, one entry per primitive folder
export interface MetricKinds {}

/**
 * The kinds of object as metrics and events name them (the `relock.kind` attribute): one per primitive,
 * in OpenTelemetry's snake_case: `'lock'`, `'fair_lock'`, `'read_lock'`, `'write_lock'`, `'fenced_lock'`,
 * `'spin_lock'`, `'multi_lock'`, `'red_lock'`, `'semaphore'`, `'permit_expirable_semaphore'`,
 * `'count_down_latch'` (the keys of `MetricKinds`). A read-write lock's two sides are `read_lock` and
 * `write_lock`.
 */
export type MetricKind = keyof MetricKinds;

/** How an acquisition call ended (the `relock.outcome` attribute). */
export type AcquireOutcome = 'acquired' | 'timeout' | 'aborted' | 'error';

/** What woke a waiter before its last attempt (`relock.woken_by`): a release message, a timer, or nothing (granted or refused at once). */
export type WokenBy = 'message' | 'timer' | 'none';
