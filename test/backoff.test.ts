/**
 * `pause` (src/backoff.ts), the wait between rounds of a multi-lock, RedLock and a leader-election run: it
 * leaves nothing behind, whether it ends by its timer or by its signal. (The leader-election tests cover
 * the timer's end through `run()`; a signal is long-lived, often the caller's for a whole loop, so a
 * listener left on it keeps its closure, and the timer's, for as long as the signal lives.)
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from '@jest/globals';
import { pause } from '../src/backoff.js';
import { activeTimers } from './support/helpers.js';

describe('pause', () => {
  it('aborted: rejects with the reason at once, and leaves no listener on the signal and no timer', async () => {
    const stop = new AbortController();
    const timers = activeTimers();
    const paused = pause(60_000, stop.signal);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(1);
    stop.abort(new Error('stopped'));
    await expect(paused).rejects.toThrow('stopped');
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    expect(activeTimers()).toBe(timers);
  });

  it('ended by its timer: resolves, and leaves no listener on the signal', async () => {
    const stop = new AbortController();
    await pause(5, stop.signal);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });

  it('given a signal aborted already: rejects with its reason, sets no timer and adds no listener', async () => {
    const stop = new AbortController();
    stop.abort(new Error('before'));
    const timers = activeTimers();
    await expect(pause(60_000, stop.signal)).rejects.toThrow('before');
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    expect(activeTimers()).toBe(timers);
  });
});
