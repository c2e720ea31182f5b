import type { MetricKind } from '../observe/kinds.js';
import { probed, type Holders, type Observer } from '../observe/observer.js';
import { cutAtDeadline } from '../redis/failures.js';
import { monotonic } from '../time.js';
import type { Channel, WakeRule } from './channel.js';
import type { Channels } from './channels.js';

export type { Attempt } from './attempt.js';
import type { Attempt } from './attempt.js';

export interface WaitOptions<T> {
  channels: Channels;
  /** The channel the object's releases are published on, and how many local waiters a message wakes. */
  channel: string;
  rule: WakeRule;
  /** How much of a wake-up budget this waiter needs: 1, or the permits a semaphore waiter asks for. Default 1. */
  need?: number;
  /** Milliseconds to keep trying: 0 for exactly one attempt, Infinity for no limit. */
  waitMs: number;
  /** Milliseconds to wait for a subscription before polling instead. */
  subscriptionTimeoutMs: number;
  /** Longest timer fallback when the attempt gives no retry time (a key without TTL, lost messages). */
  maxPollMs: number;
  signal?: AbortSignal | undefined;
  /**
   * One attempt; `deadline` is the end of the wait as `waitDeadline` gives it (pass it to `Executor.run`);
   * `wake` is what woke the waiter before it: a message on the channel, or a timer (undefined for the first
   * attempt).
   */
  attempt: (deadline: number | undefined, wake?: 'message' | 'timer') => Promise<Attempt<T>>;
  /** The object waited for, when the wait is the whole acquisition call: it is measured (`Observer.acquire`). */
  observed?: Observed;
}

/** What an object's waits take from its client (a `Core` is one). */
export interface WaitHost {
  readonly channels: Channels;
  /** Milliseconds to wait for a subscription before polling instead. */
  readonly subscriptionTimeout: number;
  /** Its lease is the longest timer fallback. */
  readonly watchdog: { readonly leaseMs: number };
}

/** `waitFor` on `host`'s shared channels, with its subscription timeout, polling at most a watchdog lease apart. */
export function clientWait<T>(host: WaitHost, options: Omit<WaitOptions<T>, 'channels' | 'subscriptionTimeoutMs' | 'maxPollMs'>): Promise<T | undefined> {
  // Built field by field: an object spread per acquisition cost more than the rest of this call.
  const { channel, rule, need, waitMs, signal, attempt, observed } = options;
  return waitFor({ channels: host.channels, channel, rule, need, waitMs, subscriptionTimeoutMs: host.subscriptionTimeout, maxPollMs: host.watchdog.leaseMs, signal, attempt, observed });
}

/** The object a wait acquires, for its observer: kind and name, key, and who holds it when granted (see `Observer.acquire`). */
export interface Observed {
  readonly observer: Observer;
  readonly kind: MetricKind;
  readonly name: string;
  readonly key: string;
  readonly holders?: Holders;
}

/**
 * The `deadline` of the attempts of a wait of `waitMs` from `start` (monotonic ms), for `Executor.run`:
 * undefined without a limit, `-Infinity` for a single attempt (wait 0: no retry, and the attempt is bounded
 * by the response timeout alone), else the end of the wait (no retry starts after it, and an attempt still
 * in flight then is given up; see `RunOptions.deadline`).
 */
export function waitDeadline(waitMs: number, start: number): number | undefined {
  if (!Number.isFinite(waitMs)) return undefined;
  return waitMs <= 0 ? -Infinity : start + waitMs;
}

/**
 * The outcome of an attempt after the first of a wait: undefined when it was given up at the end of the
 * wait time (no reply by then, see `RunOptions.deadline`): Redis answered an earlier attempt, so the wait
 * ran out rather than Redis failing (a grant it may have made is undone as any late grant). When the first
 * attempt is given up that way, Redis answered nothing during the whole wait and the error goes up.
 */
export function laterAttempt<T>(attempt: Promise<Attempt<T>>): Promise<Attempt<T> | undefined> {
  return attempt.catch((error: unknown) => {
    if (cutAtDeadline(error)) return undefined;
    throw error;
  });
}

/**
 * The wait loop of every blocking acquisition (Redisson's `tryLock` loop): try; if busy and time is left,
 * subscribe to the object's channel, try again (a release published while subscribing is not missed;
 * skipped when the channel was already subscribed before the first attempt and no wake-up was dropped since),
 * then sleep until a message or until `min(retryAfter, remaining)` (the timer covers lost messages and
 * crashed holders, who publish nothing), and repeat. When the subscription cannot be made in time it
 * polls with jittered exponential backoff instead, capped by the holder's TTL. Resolves to the acquired
 * value, or `undefined` when the wait time ran out; rejects with `signal.reason` when aborted. Bounded by
 * the wait time even when Redis does not answer (an attempt in flight is given up at its end, see
 * `laterAttempt`).
 */
export function waitFor<T>(options: WaitOptions<T>): Promise<T | undefined> {
  const o = options.observed;
  if (!o) return waitLoop(options);
  return o.observer.acquire(o.kind, o.name, o.key, o.holders, options.waitMs, options.signal, (probe) => waitLoop({ ...options, attempt: probed(probe, options.attempt) }));
}

/**
 * `waitFor`'s loop: its first attempt, kept apart (a small frame, no closure) so that an acquisition
 * granted at once pays for nothing of the wait (issue 12); `waitMore` waits when it was refused.
 */
async function waitLoop<T>(options: WaitOptions<T>): Promise<T | undefined> {
  const deadline = waitDeadline(options.waitMs, monotonic());
  // When the channel is already subscribed (other local waiters keep it, or it lingers), every release
  // published after the first attempt reaches this process and wakes a local waiter, who retries: unless
  // one was dropped (nobody had joined) by the time this waiter joined, that attempt's answer stands.
  const liveBefore = options.channels.live(options.channel);
  const seen = liveBefore?.dropped;
  const first = await options.attempt(deadline);
  if (first.acquired) return first.value;
  if (options.waitMs <= 0) return undefined;
  return waitMore(options, deadline, first, liveBefore, seen);
}

/**
 * The rest of `waitLoop` after a refused first attempt `first` (`liveBefore`, `seen`: the channel as it was
 * before it, `channels.live(channel)` and its `dropped`), for a caller that made its first attempt itself
 * (RLock's acquisition: a grant at once then costs no frame of the wait); `deadline` as `waitDeadline`
 * gave it for the start of the wait.
 */
export async function waitMore<T>(options: WaitOptions<T>, deadline: number | undefined, first: Extract<Attempt<T>, { acquired: false }>, liveBefore: Channel | undefined, seen: number | undefined): Promise<T | undefined> {
  const { channels, signal } = options;
  signal?.throwIfAborted();

  const remaining = (): number => (deadline === undefined ? Infinity : deadline - monotonic());
  // The subscription is waited for no longer than the first answer's retry time: a SUBSCRIBE slower than
  // the holder's remaining lease (a new Cluster subscriber connection on a loaded machine took 480 ms)
  // must not hold back the attempt at the lease end; the waiter then polls until the channel is live.
  const retryAfter = first.retryAfterMs >= 0 ? first.retryAfterMs : Infinity;
  const channel = await channels.join(options.channel, options.rule, Math.min(options.subscriptionTimeoutMs, remaining(), retryAfter));
  const place = channel.place(options.need);
  let woken = false;
  let poll = 5;
  let result: Attempt<T> = first;
  let current = liveBefore === channel && channel.dropped === seen;
  try {
    for (;;) {
      signal?.throwIfAborted();
      if (!current) {
        const next = await laterAttempt(options.attempt(deadline, woken ? 'message' : 'timer'));
        if (!next) return undefined;
        result = next;
        woken = false;
        if (result.acquired) return result.value;
      }
      current = false;
      const left = remaining();
      if (left <= 0) return undefined;
      let sleep = Math.min(result.retryAfterMs >= 0 ? result.retryAfterMs : options.maxPollMs, left);
      if (!channel.live) {
        poll = Math.min(poll * 2, 200);
        sleep = Math.min(sleep, poll * (0.5 + Math.random()));
      }
      woken = (await channel.park(sleep, signal, place)) === 'message';
    }
  } finally {
    // A wake-up this waiter consumed but did not use goes to the next local waiters.
    if (woken) channel.wake(place.need);
    channels.leave(options.channel);
  }
}
