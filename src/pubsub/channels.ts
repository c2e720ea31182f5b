import pRetry from 'p-retry';
import type { Logger } from 'pino';
import type { Connection, MessageListener } from '../redis/connection.js';
import { classify } from '../redis/failures.js';
import { outsideContexts } from '../context.js';

/**
 * The budget one message on a channel hands out to local waiters, each taking its `need` (see `Place`):
 * `1` for a lock's unlock message (one waiter per process retries; the rest keep waiting, so there is no
 * thundering herd), `Infinity` for "everyone" (a read-write lock's write unlock, a latch reaching zero),
 * or a number read from the message (a semaphore's new permit count, shared out by the permits each
 * waiter needs).
 */
export type WakeRule = (message: string) => number;

/** One message wakes one local waiter (a lock's unlock message, a fair-lock waiter's own channel). */
export const WAKE_ONE: WakeRule = () => 1;

/**
 * A waiter's place in a channel's queue, kept across its park calls: its arrival order (a waiter that
 * parks again after a failed attempt goes back to its place, not to the end) and how much of a wake-up
 * budget it needs (1, or the permits a semaphore waiter asks for).
 */
export interface Place {
  readonly order: number;
  readonly need: number;
}

/**
 * The pseudo-message a channel's `WakeRule` is asked about after the subscriber reconnected (messages may
 * have been lost): a rule that wakes everyone at some message (a latch) should wake everyone for it too;
 * other rules answer 0 and the first waiter in line is woken, as by one release.
 */
export const RECONNECTED = '\u0000reconnected';

/** Why a parked waiter resumed. */
export type Wakeup = 'message' | 'timeout';

interface Parked {
  resolve(reason: Wakeup): void;
  timer: NodeJS.Timeout | undefined;
  readonly place: Place;
}

/**
 * One subscribed channel, shared by every local waiter of one object (reference counted). Parked waiters
 * are woken in arrival order, each taking its need from the message's budget; the first one whose need
 * is larger than what is left stops the round, so a waiter for k permits collects them instead of being
 * overtaken by later one-permit waiters (Java's fair `Semaphore`, within one process). That unused budget
 * is handed to the waiters behind it if it leaves the queue (timeout, abort). Wake-ups that arrive while
 * no waiter is parked are kept (up to the number of waiters) for the next one to park, so a message
 * published between a failed attempt and the wait is not lost.
 */
export class Channel {
  refs = 0;
  private readonly parked: Parked[] = [];
  private pendingWakeups = 0;
  /** Budget of the last wake-up that the first parked waiter needed more than. */
  private held = 0;
  private nextOrder = 0;
  /** Settles when the SUBSCRIBE is confirmed: true, or false when it failed. */
  ready!: Promise<boolean>;
  /** True once the subscription is confirmed: messages will wake the waiters. */
  live = false;
  readonly listener = (message: string): void => this.wake(this.rule(message));

  constructor(readonly name: string, private readonly rule: WakeRule) {}

  /**
   * After a reconnect: wakes the waiters one release would (the first in line), or everyone when the
   * rule says so for `RECONNECTED`, instead of a herd of every waiter at once.
   */
  wakeAfterReconnect(): void {
    const budget = this.rule(RECONNECTED);
    this.wake(budget > 0 ? budget : (this.parked[0]?.place.need ?? 1));
  }

  /** A new place at the end of the queue, for a waiter that needs `need` of a wake-up budget. */
  place(need = 1): Place {
    return { order: this.nextOrder++, need };
  }

  /**
   * Waits at `place` for a wake-up or `timeoutMs` (Infinity: no timer). `signal` aborts the wait with
   * its reason.
   */
  park(timeoutMs: number, signal?: AbortSignal, place: Place = this.place()): Promise<Wakeup> {
    if (this.pendingWakeups > 0) {
      this.pendingWakeups--;
      return Promise.resolve('message');
    }
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Wakeup>((resolve, reject) => {
      const waiter: Parked = {
        resolve: (reason) => {
          if (waiter.timer) clearTimeout(waiter.timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(reason);
        },
        timer: undefined,
        place,
      };
      const onAbort = (): void => {
        this.remove(waiter);
        if (waiter.timer) clearTimeout(waiter.timer);
        reject(signal!.reason);
      };
      if (Number.isFinite(timeoutMs)) {
        waiter.timer = outsideContexts(() =>
          setTimeout(() => {
            this.remove(waiter);
            waiter.resolve('timeout');
          }, Math.max(0, timeoutMs)),
        );
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      let i = this.parked.length;
      while (i > 0 && this.parked[i - 1].place.order > place.order) i--;
      this.parked.splice(i, 0, waiter);
    });
  }

  /**
   * Hands `budget` to the parked waiters in order, each taking its need, until one needs more than is
   * left; a rest left when nobody is parked is kept for waiters about to park.
   */
  wake(budget: number): void {
    let left = budget;
    while (this.parked.length > 0 && this.parked[0].place.need <= left) {
      const waiter = this.parked.shift()!;
      left -= waiter.place.need;
      waiter.resolve('message');
    }
    this.held = this.parked.length > 0 ? left : 0;
    if (left > 0 && this.parked.length === 0) this.pendingWakeups = Math.min(this.refs, this.pendingWakeups + left);
  }

  /** Takes a waiter out of the queue; when it was first, the budget it held back goes to the next ones. */
  private remove(waiter: Parked): void {
    const i = this.parked.indexOf(waiter);
    if (i < 0) return;
    this.parked.splice(i, 1);
    if (i === 0 && this.held > 0) this.wake(this.held);
  }
}

/**
 * The client's subscriptions: one per channel, shared by all local waiters, unsubscribed when the last
 * one leaves. Subscribe and unsubscribe of one channel are serialized. After the subscriber connection
 * comes back from a disconnect (node-redis resubscribes by itself), every waiter is woken to retry,
 * because messages published meanwhile were lost.
 */
export class Channels {
  private readonly channels = new Map<string, Channel>();
  private readonly closing = new Map<string, Promise<void>>();
  private closed = false;

  constructor(
    private readonly connection: Connection,
    private readonly log: Logger,
  ) {
    connection.onReconnected(() => {
      this.log.debug({ channels: this.channels.size }, 'reconnected: waking the first waiter of every channel');
      for (const channel of this.channels.values()) channel.wakeAfterReconnect();
    });
  }

  /** Whether `name` is subscribed and confirmed right now (other local waiters keep it). */
  isLive(name: string): boolean {
    return this.channels.get(name)?.live === true;
  }

  /** Number of channels currently subscribed (for tests and diagnostics). */
  get size(): number {
    return this.channels.size;
  }

  /**
   * Joins `name`, subscribing if this is its first waiter, and waits up to `timeoutMs` for the
   * subscription to be live. When it is not (`channel.live` false: subscribing failed or is slow), the
   * caller polls; messages still wake it if the subscription comes up later. Every join must be matched
   * by `leave()`.
   */
  async join(name: string, rule: WakeRule, timeoutMs: number): Promise<Channel> {
    let channel = this.channels.get(name);
    if (!channel) {
      channel = new Channel(name, rule);
      this.channels.set(name, channel);
      const created = channel;
      const previous = this.closing.get(name) ?? Promise.resolve();
      channel.ready = previous
        .then(() => this.connection.subscribe(name, created.listener))
        .then(
          () => (created.live = true),
          (error: unknown) => {
            this.log.warn({ channel: name, err: error }, 'subscribe failed; waiting by polling');
            return false;
          },
        );
    }
    channel.refs++;
    await withTimeout(channel.ready, timeoutMs);
    return channel;
  }

  /** Leaves a channel joined with `join(name)`; the last one out unsubscribes. */
  leave(name: string): void {
    const channel = this.channels.get(name);
    if (!channel || --channel.refs > 0) return;
    this.channels.delete(name);
    const done = channel.ready
      .then((subscribed) => (subscribed ? this.unsubscribe(name, channel.listener) : undefined))
      .catch((error: unknown) => this.log.debug({ channel: name, err: error }, 'unsubscribe failed'))
      .finally(() => {
        if (this.closing.get(name) === done) this.closing.delete(name);
      });
    this.closing.set(name, done);
  }

  /**
   * UNSUBSCRIBE, retried while Redis refuses it for a while (BUSY during a long script, LOADING):
   * node-redis keeps the subscription until an UNSUBSCRIBE succeeds, and giving up would leave it on the
   * server for the connection's lifetime. Retries (p-retry, only after a failure) stop once the client
   * shuts down.
   */
  private async unsubscribe(name: string, listener: MessageListener): Promise<void> {
    const retryable = (error: unknown): boolean => !this.closed && classify(error) === 'transient';
    try {
      await this.connection.unsubscribe(name, listener);
    } catch (error) {
      if (!retryable(error)) throw error;
      await pRetry(() => this.connection.unsubscribe(name, listener), {
        retries: 8,
        minTimeout: 50,
        maxTimeout: 1000,
        unref: true,
        shouldRetry: ({ error: next }) => retryable(next),
      });
    }
  }

  /**
   * Shutdown: wakes every waiter (their next attempt fails because the client is closed), unsubscribes
   * every channel and waits for the unsubscribes.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const channel of this.channels.values()) {
      channel.wake(Infinity);
      channel.refs = 1;
      this.leave(channel.name);
    }
    await Promise.all([...this.closing.values()]);
  }
}

function withTimeout(promise: Promise<boolean>, ms: number): Promise<unknown> {
  if (!Number.isFinite(ms)) return promise;
  return new Promise<void>((resolve) => {
    const timer = outsideContexts(() => setTimeout(resolve, Math.max(0, ms)));
    void promise.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
