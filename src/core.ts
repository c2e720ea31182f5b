import type { Logger } from 'pino';
import type { KindEntry } from './object-kind.js';
import type { Channels } from './pubsub/channels.js';
import type { Connection } from './redis/connection.js';
import type { Observer } from './observe/observer.js';
import type { Executor } from './redis/executor.js';
import type { UnlockLatches } from './redis/latches.js';
import type { ReplicaSync } from './redis/replica-sync.js';
import type { Watchdog } from './watchdog/watchdog.js';

/**
 * What every synchronizer object shares with the `LockClient` that made it. Internal: not exported from
 * the package root.
 */
export interface Core {
  /** Random id of the client, the first half of every owner id (`clientId:contextId`). */
  readonly id: string;
  readonly keyPrefix: string;
  readonly connection: Connection;
  readonly executor: Executor;
  readonly channels: Channels;
  readonly watchdog: Watchdog;
  readonly latches: UnlockLatches;
  /** Metrics, spans and diagnostics-channel events of acquisitions, releases and lost holds (`src/observe`). */
  readonly observe: Observer;
  /** The `syncReplicas` check, when enabled: acquisitions call `confirm(key)` after they were granted. */
  readonly replicaSync: ReplicaSync | undefined;
  /** Milliseconds to wait for a subscription before falling back to polling. */
  readonly subscriptionTimeout: number;
  /** Milliseconds after its latest attempt at which a fair-lock waiter counts as dead (`fairLockWaitTimeout`). */
  readonly fairLockWaitTimeout: number;
  readonly log: Logger;
  /** Whether debug lines are logged (checked before building them on hot paths). */
  readonly debug: boolean;
  /** Throws `ClientClosedError` after `shutdown()`. */
  checkOpen(): void;
  /** Every kind of object, with the Redis type of its main key (the client's `OBJECT_DESCRIPTORS`). */
  readonly kinds: readonly KindEntry[];
  /** Aborted when `shutdown()` starts: background work (a compensating release) stops waiting. */
  readonly closing: AbortSignal;
}
