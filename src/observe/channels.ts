import { channel, tracingChannel } from 'node:diagnostics_channel';
import type { LockLostError } from '../errors.js';
import type { AcquireOutcome, MetricKind, WokenBy } from './kinds.js';

/**
 * The context object of one acquisition call, published on the `relock:acquire` TracingChannel
 * (`tracing:relock:acquire:start`, `:end`, `:asyncStart`, `:asyncEnd`, `:error`): the same object in
 * every event of the call, completed as the call goes on (TracingChannel's convention).
 */
export interface AcquireMessage {
  /** The kind of object (`relock.kind`). */
  readonly kind: MetricKind;
  /** The object's name as given to its factory (`getLock(name)`). */
  readonly name: string;
  /** The wait time asked for, in ms (Infinity: no limit; 0: one attempt). */
  readonly waitMs: number;
  /** How the call ended; set before `asyncStart`/`error`. */
  outcome?: AcquireOutcome;
  /** Acquisition attempts sent to Redis. */
  attempts?: number;
  /** What woke the waiter before its last attempt. */
  wokenBy?: WokenBy;
  /** Whether the object was acquired (TracingChannel's `result`); set on `asyncStart`. */
  result?: boolean;
  /** What the call rejected with (TracingChannel's `error`); set on `error`. */
  error?: unknown;
}

/** The context object of one release call, published on the `relock:release` TracingChannel. */
export interface ReleaseMessage {
  /** The kind of object (`relock.kind`). */
  readonly kind: MetricKind;
  /** The object's name as given to its factory. */
  readonly name: string;
  /**
   * How long the owner held the object, in ms, when this release freed it (its last hold), set on
   * `asyncStart`; only for holds this process counted (see `LostMessage.kind`).
   */
  heldMs?: number;
  /** What the release rejected with (an `IllegalMonitorStateError` when the hold was gone). */
  error?: unknown;
}

/** The message of the plain channel `relock:lost`: a hold the watchdog or an unlock found gone (as the `lockLost` event). */
export interface LostMessage {
  /**
   * The kind of object, when this process counted the hold: it was acquired while OpenTelemetry recorded
   * or a `relock:*` channel had subscribers (else undefined).
   */
  readonly kind: MetricKind | undefined;
  /** The object's name as given to its factory. */
  readonly name: string;
  /** The Redis key of the hold. */
  readonly key: string;
  /** The owner id (`clientId:contextId`) that held it; for an expirable permit, the permit id. */
  readonly owner: string;
  /** Why it was lost; see `LockLostError.reason`. */
  readonly reason: LockLostError['reason'];
}

/** `relock:acquire`: one event set per acquisition call of every lock, semaphore and latch wait. */
export const acquireChannel = tracingChannel<AcquireMessage, AcquireMessage>('relock:acquire');
/** `relock:release`: one event set per release call. */
export const releaseChannel = tracingChannel<ReleaseMessage, ReleaseMessage>('relock:release');
/** `relock:lost`: one message per lost hold. */
export const lostChannel = channel('relock:lost');
