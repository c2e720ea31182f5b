/**
 * Catalogue entries (see catalogue.ts) for the leader election (`RLeaderElection`, src/leader-election/)
 * and the scheduled-job lock (`LockClient.runExclusive`, src/job-lock/) of issue 32.
 */
import type { CatalogueEntry } from './entry.js';

const ELECTION = 'test/leader-election/leader-election.test.ts';
const JOBS = 'test/job-lock/run-exclusive.test.ts';

export const ELECTION_CATALOGUE: readonly CatalogueEntry[] = [
  {
    id: 'leader-signal-on-loss',
    mechanism: "a leadership's signal aborts when the election's lock is lost (the watchdog found it gone): the deposed leader stops believing it leads",
    file: 'src/leader-election/leadership.ts',
    find: "    else handle.signal.addEventListener('abort', lost, { once: true });",
    replace: '    else void lost;',
    tests: [ELECTION],
    pattern: '^RLeaderElection a leader whose key is gone is told by its signal',
  },
  {
    id: 'leader-term-from-fence',
    mechanism: "the term is the election's fence counter (`relock:term:{name}`, never deleted), so it strictly increases across leaders; counted in the lock's own hash it starts again at 1 with every leader",
    file: 'src/leader-election/scripts.ts',
    find: "local term = tostring(redis.call('incr', fence))",
    replace: "local term = tostring(redis.call('hincrby', lock, 'term', 1))",
    tests: [ELECTION],
    pattern: '^RLeaderElection a leader whose key is gone is told by its signal',
  },
  {
    id: 'leader-run-recampaign',
    mechanism: 'run() campaigns again after its leadership ended (the singleton-worker loop), until its signal aborts',
    file: 'src/leader-election/leader-election.ts',
    find: '    while (!stopped()) {\n      const leadership = await this.campaignOrPause(signal);',
    replace: '    for (let once = true; once && !stopped(); once = false) {\n      const leadership = await this.campaignOrPause(signal);',
    tests: [ELECTION],
    pattern: '^RLeaderElection run\\(\\) runs fn while leading, campaigns again after a loss',
  },
  {
    id: 'job-at-least-ms',
    mechanism: 'a job that finishes before atLeastMs leaves its lock to expire atLeastMs after the start (ShedLock lockAtLeastFor) instead of releasing it, so a skewed instance does not run the tick again',
    file: 'src/job-lock/job-lock.ts',
    find: '      if (rest <= 0) {',
    replace: '      if (rest <= Infinity) {',
    tests: [JOBS],
    pattern: '^runExclusive atMostMs is the lease while the job runs',
  },
  {
    id: 'job-shorten-owner',
    mechanism: "a job's early finish shortens only its own lock (owner-checked): the lock of an instance that took over after an expiry keeps its TTL",
    file: 'src/job-lock/scripts.ts',
    find: "  lua: `if redis.call('hexists', lock, owner) == 0 then return 0 end",
    replace: "  lua: `if redis.call('exists', lock) == 0 then return 0 end",
    tests: [JOBS],
    pattern: "^runExclusive an early finish whose lock is gone \\(deleted, then taken by another instance\\) leaves the new holder's lock",
  },
];
