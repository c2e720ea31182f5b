import { auxState, exists, FOREIGN_HASH, type KindDescriptor, type ObjectState, type SideHolder } from '../descriptor.js';
import { LOCK_NO_TTL } from '../lock/descriptor.js';
import type { Description } from '../descriptor.js';
import { RReadWriteLock } from './read-write-lock.js';

/** The suffix of a writer's field in the hash (`<owner>:write`). */
const WRITE_SUFFIX = ':write';

/** The mode, the readers and the writer, each hold with its remaining lease (from Redis server time). */
function sides(state: ObjectState): Pick<Description, 'mode' | 'readers' | 'writer'> {
  const deadlines = new Map(auxState(state, 'leases').zset.map(({ member, score }) => [member, score]));
  const side = (field: string, holds: number): SideHolder => ({
    owner: field.endsWith(WRITE_SUFFIX) ? field.slice(0, -WRITE_SUFFIX.length) : field,
    holds,
    leasesMs: Array.from({ length: holds }, (_, i) => {
      const deadline = deadlines.get(`${field}:${i + 1}`);
      return deadline === undefined ? 0 : deadline - state.now;
    }),
  });
  const fields = [...state.main.hash].filter(([field]) => field !== 'mode');
  const writer = fields.find(([field]) => field.endsWith(WRITE_SUFFIX));
  return {
    mode: state.main.hash.get('mode') ?? null,
    readers: fields.filter(([field]) => !field.endsWith(WRITE_SUFFIX)).map(([field, holds]) => side(field, Number(holds))),
    writer: writer ? side(writer[0], Number(writer[1])) : null,
  };
}

/**
 * `RReadWriteLock`: a hash `keyPrefix + name` marked by its `mode` field (no `kind` field), each hold's
 * lease in `relock:leases:{name}` (a sorted set), channel `relock:rwlock:{name}`.
 */
export const READ_WRITE_LOCK_DESCRIPTOR: KindDescriptor = {
  kind: 'read-write-lock',
  label: 'read-write lock (RReadWriteLock)',
  redisType: 'hash',
  keys: ['leases'],
  channels: [['rwlock']],
  recognise: (state) => state.main.hash.has('mode') || exists(auxState(state, 'leases')),
  fallback: true,
  foreign: FOREIGN_HASH,
  absent: { precedence: 40, keys: ['leases'], channels: true },
  details: sides,
  summary: (d) => (d.mode ? `${d.mode} mode, ${d.readers!.length} reader(s)${d.writer ? ', 1 writer' : ''}` : 'not held'),
  noTtl: LOCK_NO_TTL,
  lock: {
    // Through the side of its mode: its `forceUnlock` deletes the lock only in that mode.
    forceUnlock: (core, name, before) => {
      const lock = new RReadWriteLock(core, name);
      return (before.mode === 'read' ? lock.readLock() : lock.writeLock()).forceUnlock();
    },
    deletes: ['leases'],
  },
};
