/**
 * The hooks of the lock protocol engine (src/lock/protocol/): what a hash lock (`RLock` and every variant
 * that extends it) gives the engine so that one acquisition, wait, unlock and undo protocol serves them all.
 * A lock configures its key layout (`key`, `holdKey`, `ownerOf`), its scripts (`runAcquire`, `runUnlock`,
 * the renewal), its grant shape (`Grant.token`: the fenced lock's token) and its waiting (`waitChannel`,
 * `wakeRule`, `waitAfter`; `beginWait`/`endWait` for a queue, as the fair lock's). The engine never
 * imports a lock class: the lock passes itself as these hooks.
 * @internal Not exported from the package.
 */
import type { LockContext } from '../../context.js';
import type { Core } from '../../core.js';
import type { ObjectKind } from '../../kinds.js';
import type { MetricKind } from '../../observe/kinds.js';
import type { Channel, WakeRule } from '../../pubsub/channel.js';
import type { Attempt } from '../../pubsub/wait.js';
import type { RenewalKind, WatchdogHold } from '../../watchdog/hold.js';
import type { AcquireResult } from '../scripts.js';

/** What an acquisition attempt got: the send time of the granting attempt (its lease counts from there), and the fenced lock's token. */
export interface Grant {
  readonly sentAt: number;
  readonly token?: bigint | undefined;
}

/** An acquisition call that got the lock: its owner and its grant (see `acquireForCaller` in caller.ts). */
export interface Taken {
  readonly ctx: LockContext;
  readonly grant: Grant;
}

/** An attempt that found the lock busy, as the wait loops take it. */
export type Refused = Extract<Attempt<Grant>, { acquired: false }>;

/**
 * A call waiting for a lock its first attempt found busy, as the lock's `waitAfter` hook sees it (an
 * `Acquisition` of acquire.ts): its owner, its wait and a way to send the next attempt.
 */
export interface Waiter {
  readonly owner: string;
  /** The caller's wait time in ms (0: one attempt, Infinity: no limit). */
  readonly waitMs: number;
  /** The end of the wait, as `waitDeadline` gives it (monotonic ms), or undefined without limit. */
  readonly deadline: number | undefined;
  readonly signal: AbortSignal | undefined;
  /** The wait's channel as it was before the first attempt, and its `dropped` count then (see `waitMore`). */
  readonly liveBefore: Channel | undefined;
  readonly seen: number | undefined;
  /** Sends the next attempt of the call (`wake`: what woke the waiter; undefined when it polls). */
  next(wake: 'message' | 'timer' | undefined): Promise<Attempt<Grant>>;
}

/**
 * What the engine asks of a hash lock. Every member is the lock's own (an `RLock` passes itself); a
 * variant configures the engine by overriding some of them. Keys: the lock's key and its unlock latches
 * `relock:unlock:{name}:<id>`; whatever else a variant keeps is reached only through its scripts.
 */
export interface LockHooks {
  readonly core: Core;
  /** The name given to the factory. */
  readonly name: string;
  /** The Redis key of the lock. */
  readonly key: string;
  /** This lock's entry in a context's holds (`clientId + ' ' + key`; the sides of a read-write lock differ). */
  readonly holdKey: string;
  /** How metrics and events name this lock's kind. */
  readonly metricKind: MetricKind;
  /** What a WRONGTYPE reply on the lock's key is reported as. */
  readonly expects: { key: string; kind: ObjectKind };
  /** The part of the lock's unlock latch keys that every unlock shares. */
  readonly latchPrefix: string;
  /** How the watchdog renews a hold and `setLease` sets a lease (the owner-checked `PEXPIRE`). */
  readonly renewal: RenewalKind;
  /** Whether a handle's `extend()` may set a new lease (`setLease`). */
  readonly extendable: boolean;
  /** How many local waiters one message on the wait channel wakes. */
  readonly wakeRule: WakeRule;
  /** The owner id of `ctx` in Redis (`clientId:contextId`, or the caller's `identifier`). */
  ownerOf(ctx: LockContext): string;
  /** The context that owns (or would own) the lock for the caller; undefined outside any context. */
  context(): LockContext | undefined;
  /** Runs the acquire script once (`guard`: '' or the count before a lost attempt; `held`: the count this client knows). */
  runAcquire(owner: string, lease: string, guard: string, held: string): Promise<AcquireResult>;
  /** Runs the unlock script once: nil when `owner` holds nothing, 0 when holds remain, 1 when released (+2: latched). */
  runUnlock(owner: string, latch: string, attempt: number, guard: string): Promise<number | null>;
  /** Registers `owner`'s hold with the watchdog before its acquire is sent. */
  registerHold(owner: string): WatchdogHold;
  /** The channel a waiter for `owner` listens on, or undefined when the lock waits without pub/sub. */
  waitChannel(owner: string): string | undefined;
  /** Waits after the refused first attempt `first`; resolves to the grant, or undefined when the wait ran out. */
  waitAfter(waiter: Waiter, first: Refused): Promise<Grant | undefined>;
  /** Called before the first attempt of a call that may wait `waitMs` (the fair lock's queue bookkeeping). */
  beginWait(owner: string, waitMs: number): void;
  /** Called when that call ends; a returned promise is awaited before a call without the lock resolves. */
  endWait(owner: string, waitMs: number, granted: boolean): Promise<void> | undefined;
  /** Sets the lock's TTL to `leaseMs` if `ctx`'s owner holds it: the send time (monotonic ms), or undefined. */
  setLease(ctx: LockContext, leaseMs: number): Promise<number | undefined>;
}

/** Does nothing (settles a promise whatever its outcome). */
export const ignore = (): void => {};
