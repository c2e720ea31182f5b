import { auxState, holders, ownersText, type KindDescriptor, type ObjectState, type SubscriberCount, type Waiter } from '../descriptor.js';
import { hashLockDescriptor, LOCK_CHANNEL } from '../lock/descriptor.js';
import { RFairLock } from './fair-lock.js';

/** A queued owner's own channel, `relock:channel:{name}:<owner>` (as `RFairLock.waiterChannel`). */
const waiterChannel = (state: ObjectState, owner: string): string => `${state.keys.channel(LOCK_CHANNEL)}:${owner}`;

/** The queue, head first, with each waiter's deadline (from Redis server time) and subscribers. */
function waiters(state: ObjectState, count: SubscriberCount): Waiter[] {
  const deadlines = new Map(auxState(state, 'timeout').zset.map(({ member, score }) => [member, score]));
  return auxState(state, 'queue').list.map((owner, i) => {
    const deadline = deadlines.get(owner);
    const channel = waiterChannel(state, owner);
    return { owner, position: i + 1, deadlineInMs: deadline === undefined ? null : deadline - state.now, channel, subscribers: count(channel) };
  });
}

/**
 * `RFairLock`: `RLock`'s hash with `kind` = `fair-lock`, the queue `relock:queue:{name}` (a list) and the
 * waiters' deadlines `relock:timeout:{name}` (a sorted set); it wakes waiters on their own channels only.
 */
export const FAIR_LOCK_DESCRIPTOR: KindDescriptor = hashLockDescriptor('fair-lock', 'fair lock (RFairLock)', (core, name) => new RFairLock(core, name), {
  keys: ['queue', 'timeout'],
  channels: [],
  dynamicChannels: (state) => auxState(state, 'queue').list.map((owner) => waiterChannel(state, owner)),
  absent: { precedence: 50, keys: ['queue', 'timeout'], channels: false },
  details: (state, count) => ({ holders: holders(state.main), queue: waiters(state, count) }),
  summary: (d) => `${ownersText(d.holders!.length)}, ${d.queue!.length} waiting`,
});
