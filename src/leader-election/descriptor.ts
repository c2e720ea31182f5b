import { auxState, holders, type KindDescriptor } from '../descriptor.js';
import { hashLockDescriptor, LOCK_CHANNEL } from '../lock/descriptor.js';
import { LeaderLock } from './leader-lock.js';

/** The fields of an election's hash that are not owners. */
const LEADER_FIELDS = new Set(['leader', 'term']);

/**
 * `RLeaderElection`: a fenced lock's hash with `kind` = `leader-election` plus `leader` (the identity) and
 * `term`, the term counter `relock:term:{name}` (never deleted), and the channels `relock:channel:{name}`
 * (releases) and `relock:channel:{name}:leader` (elections). Without its hash (nobody leads), its term
 * counter shows it.
 */
export const LEADER_ELECTION_DESCRIPTOR: KindDescriptor = hashLockDescriptor('leader-election', 'leader election (LeaderElection)', (core, name) => new LeaderLock(core, name, ''), {
  keys: ['term'],
  channels: [LOCK_CHANNEL, ['channel', 'leader']],
  absent: { precedence: 61, keys: ['term'], channels: false },
  details: (state) => {
    const identity = state.main.hash.get('leader');
    const term = auxState(state, 'term').value;
    return {
      holders: holders(state.main).filter((h) => !LEADER_FIELDS.has(h.owner)),
      leader: identity === undefined ? null : { identity, term: state.main.hash.get('term') ?? '', remainingMs: state.main.pttl },
      ...(term !== undefined ? { term } : {}),
    };
  },
  summary: (d) => (d.leader ? `led by ${d.leader.identity}, term ${d.leader.term}` : 'no leader') + (d.term !== undefined ? `, last term ${d.term}` : ''),
  noTtl: 'the election never expires and its leader stays until it resigns (or force-unlock)',
});
