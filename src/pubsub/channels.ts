import pRetry from 'p-retry';
import type { Logger } from 'pino';
import type { Connection, MessageListener } from '../redis/connection.js';
import { classify } from '../redis/failures.js';
import { outsideContexts } from '../context.js';
import { setLongTimeout } from '../time.js';
import { Channel, type WakeRule } from './channel.js';

/**
 * How long a channel stays subscribed after its last local waiter left (ms): an object contended again
 * soon after finds it live and pays no SUBSCRIBE/UNSUBSCRIBE pair, and its first attempt's answer needs
 * no repeat after joining (see `waitLoop`). `close()` ends the lingering at once.
 */
export const LINGER_MS = 250;

/**
 * The client's subscriptions: one per channel, shared by all local waiters, unsubscribed `LINGER_MS`
 * after the last one left unless a waiter came back meanwhile. Subscribe and unsubscribe of one channel
 * are serialized. After the subscriber connection comes back from a disconnect (node-redis resubscribes by
 * itself), the first waiter of every channel is woken to retry, because messages published meanwhile were
 * lost; when the user's client is closed by its owner (`Connection.onClosed`), every waiter is woken, and
 * rejects with `ClientClosedError` at its next attempt.
 *
 * An UNSUBSCRIBE that fails for good (the connection dropped with it in flight, or Redis refused it past
 * the retries) is owed: node-redis keeps a channel whose UNSUBSCRIBE failed and subscribes it again when
 * its connection comes back, so relock sends the UNSUBSCRIBE again after every reconnect until one
 * succeeds (`owedCount`). Without that, a channel nobody waits on stayed subscribed for the connection's
 * lifetime.
 */
export class Channels {
  private readonly channels = new Map<string, Channel>();
  private readonly closing = new Map<string, Promise<void>>();
  /** Channels without waiters, each with the timer that unsubscribes it when no waiter came back. */
  private readonly lingering = new Map<string, NodeJS.Timeout>();
  /** Channels dropped whose UNSUBSCRIBE failed: sent again after the next reconnect (see the class comment). */
  private readonly owed = new Set<Channel>();
  private closed = false;

  constructor(
    private readonly connection: Connection,
    private readonly log: Logger,
  ) {
    connection.onReconnected(() => {
      this.log.debug({ channels: this.channels.size, owed: this.owed.size }, 'reconnected: waking the first waiter of every channel');
      for (const channel of this.channels.values()) channel.wakeAfterReconnect();
      for (const channel of [...this.owed]) this.settle(channel);
    });
    // Nobody can acquire on a client its owner closed: every waiter is woken, and its next attempt
    // rejects with ClientClosedError instead of waiting for a message or timer that cannot help.
    connection.onClosed(() => {
      this.log.debug({ channels: this.channels.size }, 'the Redis client was closed by its owner: waking every waiter');
      for (const channel of this.channels.values()) channel.wake(Infinity);
    });
  }

  /**
   * `name`'s channel when it is subscribed and confirmed right now (other local waiters keep it, or it
   * lingers), else undefined. A waiter takes it before its first attempt: when `join` then gives it the
   * same channel with the same `messages` count, every release published after that attempt would have
   * reached this process, so the attempt's answer stays valid (see `waitLoop`).
   */
  live(name: string): Channel | undefined {
    const channel = this.channels.get(name);
    return channel?.live === true ? channel : undefined;
  }

  /** Whether any channel is subscribed or being subscribed (no `live` channel exists otherwise): one check before a channel name is made. */
  get empty(): boolean {
    return this.channels.size === 0;
  }

  /** Number of channels with local waiters now (for tests and diagnostics). */
  get size(): number {
    return this.channels.size - this.lingering.size;
  }

  /** Number of channels subscribed without waiters, kept for `LINGER_MS` (for tests and diagnostics). */
  get lingeringCount(): number {
    return this.lingering.size;
  }

  /**
   * Number of channels left by every waiter whose UNSUBSCRIBE failed and is sent again after the next
   * reconnect (for tests and diagnostics).
   */
  get owedCount(): number {
    return this.owed.size;
  }

  /**
   * Joins `name`, subscribing if this is its first waiter (or taking it back from lingering), and waits
   * up to `timeoutMs` for the subscription to be live (no wait, and no timer, when it already is). When
   * it is not (`channel.live` false: subscribing failed or is slow), the caller polls; messages still wake
   * it if the subscription comes up later. Every join must be matched by `leave()`. Resolves to the
   * channel itself when it is live already (no promise made: `await` takes it as it is).
   */
  join(name: string, rule: WakeRule, timeoutMs: number): Channel | Promise<Channel> {
    let channel = this.channels.get(name);
    if (!channel) {
      channel = new Channel(name, rule);
      this.channels.set(name, channel);
      const created = channel;
      const previous = this.closing.get(name) ?? Promise.resolve();
      channel.ready = previous
        .then(() => this.connection.subscribe(name, created.listener))
        .then(
          () => {
            created.live = true;
            // A waiter stopped waiting for the subscription and polled meanwhile: a release published
            // before it was live reached nobody, so the waiters retry once now (as after a reconnect).
            if (created.joinedBeforeLive) created.wakeAfterReconnect();
            return true;
          },
          (error: unknown) => {
            this.log.warn({ channel: name, err: error }, 'subscribe failed; waiting by polling');
            return false;
          },
        );
    }
    const linger = this.lingering.get(name);
    if (linger) {
      clearTimeout(linger);
      this.lingering.delete(name);
    }
    channel.refs++;
    if (channel.live) return channel;
    const joined = channel;
    return withTimeout(channel.ready, timeoutMs).then(() => {
      if (!joined.live) joined.joinedBeforeLive = true;
      return joined;
    });
  }

  /**
   * Leaves a channel joined with `join(name)`; after the last one out it lingers for `LINGER_MS`, then
   * unsubscribes (at once when the client is closed).
   */
  leave(name: string): void {
    const channel = this.channels.get(name);
    if (!channel || --channel.refs > 0) return;
    channel.idle();
    // A subscription that failed is not kept: the next waiter tries to subscribe again.
    if (this.closed || !channel.live) return this.drop(channel);
    this.lingering.set(name, outsideContexts(() => setTimeout(() => this.drop(channel), LINGER_MS).unref()));
  }

  /** Forgets a channel without waiters and unsubscribes it; a later join subscribes anew after this. */
  private drop(channel: Channel): void {
    const name = channel.name;
    clearTimeout(this.lingering.get(name));
    this.lingering.delete(name);
    if (this.channels.get(name) !== channel) return;
    this.channels.delete(name);
    this.serialize(name, channel.ready.then((subscribed) => (subscribed ? this.unsubscribe(name, channel.listener) : undefined)), channel);
  }

  /**
   * Sends an owed UNSUBSCRIBE again, after what is under way on its channel: an UNSUBSCRIBE, or the
   * SUBSCRIBE of a waiter that joined the channel again (the client then only forgets the old listener
   * and sends nothing, so the new subscription stays). Owed again if it fails.
   */
  private settle(channel: Channel): void {
    this.owed.delete(channel);
    const previous = this.channels.get(channel.name)?.ready ?? this.closing.get(channel.name) ?? Promise.resolve();
    this.serialize(channel.name, previous.then(() => this.connection.unsubscribe(channel.name, channel.listener)), channel);
  }

  /**
   * Records `unsubscribing` (the UNSUBSCRIBE of `channel`) as what `name`'s next SUBSCRIBE waits for;
   * when it fails, the UNSUBSCRIBE is owed (unless the client is closing, which drops the connection).
   */
  private serialize(name: string, unsubscribing: Promise<unknown>, channel: Channel): void {
    const done = unsubscribing
      .then(
        () => undefined,
        (error: unknown) => {
          this.log.debug({ channel: name, err: error }, 'unsubscribe failed: sent again after the next reconnect');
          if (!this.closed) this.owed.add(channel);
        },
      )
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
   * every channel and waits for the unsubscribes, at most `timeoutMs` (the client's `responseTimeout`):
   * while Redis is unreachable an UNSUBSCRIBE is never answered, and shutdown must not wait for Redis to
   * come back. Resolves without error either way; an unanswered UNSUBSCRIBE holds no timer of ours.
   */
  async close(timeoutMs = Infinity): Promise<void> {
    this.closed = true;
    for (const channel of [...this.channels.values()]) {
      channel.wake(Infinity);
      this.drop(channel);
    }
    // One last try for the owed ones: a user's cluster or Sentinel client stays open after shutdown.
    for (const owedChannel of [...this.owed]) this.settle(owedChannel);
    await withTimeout(Promise.all([...this.closing.values()]), timeoutMs);
  }
}

/** Resolves when `promise` settles or after `ms` (no timer when `ms` is infinite), whichever is first. */
function withTimeout(promise: Promise<unknown>, ms: number): Promise<unknown> {
  if (!Number.isFinite(ms)) return promise;
  return new Promise<void>((resolve) => {
    const timer = outsideContexts(() => setLongTimeout(resolve, ms));
    void promise.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
