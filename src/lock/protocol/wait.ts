/**
 * The default wait of a hash lock whose first attempt found it busy: pub/sub on the lock's wait channel
 * (`LockHooks.waitChannel`), woken by its `wakeRule`, with a timer on the holder's TTL as fallback (see
 * `waitMore`). A lock that waits otherwise (the spin lock polls) gives its own `waitAfter`.
 * @internal Not exported from the package.
 */
import { waitMore } from '../../pubsub/wait.js';
import type { Grant, LockHooks, Refused, Waiter } from './hooks.js';

/** Waits for `lock` after `waiter`'s first attempt found it busy (`first`): resolves to the grant, or undefined when the wait time ran out. */
export function waitOnChannel(lock: LockHooks, waiter: Waiter, first: Refused): Promise<Grant | undefined> {
  const { core } = lock;
  const options = {
    channels: core.channels,
    channel: lock.waitChannel(waiter.owner)!,
    rule: lock.wakeRule,
    waitMs: waiter.waitMs,
    subscriptionTimeoutMs: core.subscriptionTimeout,
    maxPollMs: core.watchdog.leaseMs,
    signal: waiter.signal,
    attempt: (_deadline: number | undefined, wake?: 'message' | 'timer') => waiter.next(wake),
  };
  return waitMore(options, waiter.deadline, first, waiter.liveBefore, waiter.seen);
}
