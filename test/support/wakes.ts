/**
 * How a waiter was woken, read from relock's `relock:acquire` TracingChannel: exact where a wall-clock bound
 * is not. A test that a release wakes its waiter by message asserts `wokenBy: 'message'` with
 * `MESSAGE_WAKE_MS` as its time bound.
 */
import * as diagnostics from 'node:diagnostics_channel';
import { expect } from '@jest/globals';
import type { AcquireMessage, AcquireOutcome, WokenBy } from '../../src/index.js';

/**
 * The time bound of a wake by message, in ms: a message's round trip takes 0.4–2 ms here alone and 30–70 ms
 * for a jest process's first wake under load, and CI's whole-suite run (two jest workers and a dozen
 * `redis-server`s on 2 cores) once took 254 ms. The tests that use it wait 5 s or more, so a waiter left to
 * its timer fallback still misses it by far; that the message woke it is `wokenBy`'s to show.
 */
export const MESSAGE_WAKE_MS = 1000;

const CHANNEL = 'tracing:relock:acquire:asyncStart';

/** The acquisitions recorded by `recordAcquisitions`. */
export interface Acquisitions {
  /** The recorded calls on the object named `name` that have ended, as published (attempts included). */
  calls(name: string): AcquireMessage[];
  /** The recorded calls on the object named `name` that have ended: how each ended and what woke it last. */
  of(name: string): Array<{ outcome: AcquireOutcome | undefined; wokenBy: WokenBy | undefined }>;
  /** Stops recording (call it in `finally`: the channel is the process's). */
  stop(): void;
}

/** Records every acquisition call that starts from now on, until `stop()`. Start it before the waiter's call: a call started before is not traced. */
export function recordAcquisitions(): Acquisitions {
  const calls: AcquireMessage[] = [];
  const record = (message: unknown): void => void calls.push(message as AcquireMessage);
  diagnostics.subscribe(CHANNEL, record);
  const of = (name: string): AcquireMessage[] => calls.filter((c) => c.name === name);
  return {
    calls: of,
    of: (name) => of(name).map(({ outcome, wokenBy }) => ({ outcome, wokenBy })),
    stop: () => void diagnostics.unsubscribe(CHANNEL, record),
  };
}

/** Asserts that the one recorded call on `name` acquired, woken by a message, `tookMs` after the release (under `MESSAGE_WAKE_MS`). */
export function expectWokenByMessage(acquisitions: Acquisitions, name: string, tookMs: number): void {
  expect({ inTime: tookMs < MESSAGE_WAKE_MS, calls: acquisitions.of(name) }).toEqual({ inTime: true, calls: [{ outcome: 'acquired', wokenBy: 'message' }] });
}
