import { outsideContexts } from '../context.js';
import { monotonic, setLongTimeout } from '../time.js';

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
  /** Takes the waiter out of its abort listener and settles its park. */
  settle(reason: Wakeup): void;
  /** When its fallback time is up (monotonic ms; Infinity: never). */
  readonly due: number;
  readonly place: Place;
}

/**
 * One subscribed channel, shared by every local waiter of one object (reference counted). Parked waiters
 * are woken in arrival order, each taking its need from the message's budget; the first one whose need
 * is larger than what is left stops the round, so a waiter for k permits collects them instead of being
 * overtaken by later one-permit waiters (Java's fair `Semaphore`, within one process). That unused budget
 * is handed to the waiters behind it if it leaves the queue (timeout, abort). Wake-ups that arrive while
 * no waiter is parked are kept (up to the number of waiters) for the next one to park, so a message
 * published between a failed attempt and the wait is not lost. The waiters' fallback times (a holder's
 * TTL, for lost messages) share one timer, set to the earliest of them.
 */
export class Channel {
  refs = 0;
  /**
   * Wake-ups (messages, reconnects) that no local waiter took: nobody had joined (the channel lingered), or
   * more came than there are waiters. A waiter compares it across its first attempt (see `waitLoop`): any
   * other wake-up reached a local waiter, who retries.
   */
  dropped = 0;
  private readonly parked: Parked[] = [];
  private pendingWakeups = 0;
  /** Budget of the last wake-up that the first parked waiter needed more than. */
  private held = 0;
  private nextOrder = 0;
  /** The fallback timer and the time it is set for (Infinity: none). */
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Infinity;
  /** Settles when the SUBSCRIBE is confirmed: true, or false when it failed. */
  ready!: Promise<boolean>;
  /** True once the subscription is confirmed: messages will wake the waiters. */
  live = false;
  /** A waiter stopped waiting for the subscription before it was confirmed (it polls): woken once when it is. */
  joinedBeforeLive = false;
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

  /**
   * The budget of the last wake-up held back for the first parked waiter, which needs more (0: none);
   * handed to the waiters behind it if that waiter leaves. For tests and diagnostics.
   */
  get heldBack(): number {
    return this.held;
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
      const due = Number.isFinite(timeoutMs) ? monotonic() + Math.max(0, timeoutMs) : Infinity;
      let waiter: Parked;
      if (signal) {
        const onAbort = (): void => {
          this.remove(waiter);
          reject(signal.reason);
        };
        waiter = {
          settle: (reason) => {
            signal.removeEventListener('abort', onAbort);
            resolve(reason);
          },
          due,
          place,
        };
        signal.addEventListener('abort', onAbort, { once: true });
      } else waiter = { settle: resolve, due, place }; // no signal: nothing to listen to, no closure of our own
      let i = this.parked.length;
      while (i > 0 && this.parked[i - 1].place.order > place.order) i--;
      this.parked.splice(i, 0, waiter);
      if (waiter.due < this.timerDue) this.arm(waiter.due);
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
      waiter.settle('message');
    }
    this.held = this.parked.length > 0 ? left : 0;
    if (this.parked.length === 0) {
      this.disarm();
      if (left > 0) {
        if (this.pendingWakeups + left > this.refs) this.dropped++;
        this.pendingWakeups = Math.min(this.refs, this.pendingWakeups + left);
      }
    }
  }

  /** Forgets wake-ups kept for waiters about to park: none is left (the channel lingers unused). */
  idle(): void {
    this.pendingWakeups = 0;
  }

  /** Takes a waiter out of the queue; when it was first, the budget it held back goes to the next ones. */
  private remove(waiter: Parked): void {
    const i = this.parked.indexOf(waiter);
    if (i < 0) return;
    this.parked.splice(i, 1);
    if (i === 0 && this.held > 0) this.wake(this.held);
    if (this.parked.length === 0) this.disarm();
  }

  /** Sets the fallback timer for `due` (monotonic ms), replacing a later one. */
  private arm(due: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = outsideContexts(() => setLongTimeout(this.expire, due - monotonic()));
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDue = Infinity;
  }

  /** The fallback timer fired: every waiter whose time is up resumes with 'timeout'; the timer moves to the next one. */
  private readonly expire = (): void => {
    this.timer = undefined;
    this.timerDue = Infinity;
    // Timers may fire up to a millisecond early against performance.now().
    const now = monotonic() + 1;
    for (const waiter of this.parked.filter((w) => w.due <= now)) {
      if (!this.parked.includes(waiter)) continue;
      this.remove(waiter);
      waiter.settle('timeout');
    }
    let next = Infinity;
    for (const waiter of this.parked) next = Math.min(next, waiter.due);
    if (next < Infinity) this.arm(next);
  };
}
