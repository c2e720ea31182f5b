import { auxState, exists, type KindDescriptor, type ObjectState, type Permits } from '../descriptor.js';

/** A permit id `clientId-n` (`clientId-n:i` when several were taken at once). */
const PERMIT_ID = /^[\w-]+-[0-9a-z]+(:\d+)?$/;

/** The permits: how many in all, taken, free, expired, and each held one's remaining lease (from Redis server time). */
function permits(state: ObjectState): Permits {
  const live = state.main.zset.filter(({ score }) => score > state.now);
  const expired = state.main.zset.length - live.length;
  const total = Number(auxState(state, 'permits').value ?? 0);
  const taken = state.main.size - expired;
  return { total, taken, free: total - taken, expiredNotReclaimed: expired, leases: live.map(({ member, score }) => ({ id: member, remainingMs: score - state.now })) };
}

/**
 * `RPermitExpirableSemaphore`: the held permits in a sorted set `keyPrefix + name` (id → expiry), the
 * number of permits in `relock:permits:{name}`, channel `relock:channel:{name}:permits`.
 */
export const PERMIT_EXPIRABLE_SEMAPHORE_DESCRIPTOR: KindDescriptor = {
  kind: 'expirable-semaphore',
  label: 'expirable semaphore (RPermitExpirableSemaphore)',
  redisType: 'zset',
  keys: ['permits'],
  channels: [['channel', 'permits']],
  recognise: (state) => exists(auxState(state, 'permits')) || state.main.zset.every(({ member }) => PERMIT_ID.test(member)),
  foreign: 'sorted set whose members are not relock permit ids',
  absent: { precedence: 70, keys: ['permits'], channels: false },
  details: (state) => ({ permits: permits(state) }),
  summary: (d) => `${d.permits!.taken} of ${d.permits!.total} permits taken`,
  noTtl: 'its permits are never reclaimed by expiry of the key',
};
