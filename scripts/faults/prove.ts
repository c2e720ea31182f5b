/**
 * `npm run faults -- --prove`: the proof that every checker can fail. For each checker, a mutant of
 * relock (or of the oracle) that breaks what the checker guards, and a scenario that exposes it: the
 * quick fault suite runs that scenario on a mutated copy of the tree (`withMutant`, scripts/mutants/
 * scratch.ts) and the checker must report a violation. A checker that stays green on its mutant proves
 * nothing, and fails `--prove`.
 */
import { spawn } from 'node:child_process';
import { checkMutations, repoRoot, withMutant, type Mutation } from '../mutants/scratch.js';
import { CHECKERS, failedCheckers, type Checker, type ScenarioResult } from './result.js';

/** A checker, the mutant it must catch, and the scenario that runs it. */
export interface Proof {
  checker: Checker;
  /** What the mutant breaks, in one line. */
  mutant: string;
  scenario: string;
  mutations: Mutation[];
}

/** The verdict of one proof. */
export interface ProofVerdict {
  checker: Checker;
  mutant: string;
  scenario: string;
  /** The checker reported a violation on the mutant (what must happen). */
  caught: boolean;
  /** The checker's violations, or why the run gave no verdict. */
  verdict: string;
  durationMs: number;
}

const LOCK_SCRIPTS = 'src/lock/scripts.ts';
const FENCED_SCRIPTS = 'src/fenced-lock/scripts.ts';
const CHANNELS = 'src/pubsub/channels.ts';
const CHANNEL = 'src/pubsub/channel.ts';

export const PROOFS: Proof[] = [
  {
    checker: 'exclusion',
    mutant: 'the watchdog renews a lock whoever holds it (renewal owner check removed): after a restart the stale holder renews its successor\'s lock and is never told',
    // The holder is stopped until the second grant: its renewal lands on the successor's lock every time.
    scenario: 'redis-restart-stale-renewal',
    mutations: [{ file: LOCK_SCRIPTS, find: "if redis.pcall('hexists', lock, owner) == 1 then", replace: "if redis.pcall('exists', lock) == 1 then" }],
  },
  {
    checker: 'tokens',
    mutant: 'the fence counter counts down (INCR → DECR): every token is lower than the one before',
    scenario: 'holder-kill',
    mutations: [{ file: FENCED_SCRIPTS, find: "granted: \"redis.call('incr', fence)\\nreturn {1, redis.call('get', fence)}\"", replace: "granted: \"redis.call('decr', fence)\\nreturn {1, redis.call('get', fence)}\"" }],
  },
  {
    checker: 'fencing',
    mutant: 'every fencing token is 0: the resource, which accepts a token at least as high as any seen, takes every holder\'s write',
    scenario: 'holder-block-1.5x',
    mutations: [{ file: FENCED_SCRIPTS, find: "granted: \"redis.call('incr', fence)\\nreturn {1, redis.call('get', fence)}\"", replace: "granted: \"return {1, '0'}\"" }],
  },
  {
    checker: 'fencing',
    mutant: "relock/fencing's PostgreSQL fence accepts any token (its comparison `WHERE relock_f.token <= EXCLUDED.token` removed): a holder stopped past its lease writes over its successor's",
    scenario: 'postgres-fenced-writes',
    mutations: [{ file: 'src/fencing/postgres.ts', find: ' WHERE relock_f.token <= EXCLUDED.token', replace: '' }],
  },
  {
    checker: 'lost-updates',
    mutant: 'a busy fenced lock is granted anyway (with a fresh token): two holders at once, no fault to excuse it',
    scenario: 'holder-kill',
    mutations: [{ file: FENCED_SCRIPTS, find: "busy: \"return {0, redis.call('pttl', lock)}\"", replace: "busy: \"return {1, tostring(redis.call('incr', fence))}\"" }],
  },
  {
    checker: 'fenced-lost-updates',
    mutant: 'the oracle\'s fenced resource stores the value it was given minus one (an oracle that loses writes)',
    scenario: 'holder-kill',
    mutations: [{ file: 'scripts/faults/oracle.ts', find: "redis.call('hset', KEYS[1], 'max', ARGV[1], 'value', ARGV[3])", replace: "redis.call('hset', KEYS[1], 'max', ARGV[1], 'value', ARGV[3] - 1)" }],
  },
  {
    checker: 'occupancy',
    mutant: 'the request latch never replays (a retried call runs again): a release retried after a lost reply gives its permit back twice',
    scenario: 'semaphore-release-reply-lost',
    mutations: [{ file: 'src/redis/object-script.ts', find: "if retry == '1' then", replace: 'if false then' }],
  },
  {
    checker: 'liveness',
    mutant: 'a new lock gets 10 leases of TTL instead of one: a holder killed before its first renewal blocks the lock for 6 s',
    scenario: 'holder-kill',
    mutations: [{ file: LOCK_SCRIPTS, find: "  redis.call('pexpire', lock, leaseMs)`;", replace: "  redis.call('pexpire', lock, leaseMs * 10)`;" }],
  },
  {
    checker: 'starvation',
    mutant: 'waiters have no timer fallback and are not woken after a resubscribe: a release published while their subscription was down is lost for good',
    scenario: 'many-waiters',
    mutations: [
      { file: CHANNEL, find: 'if (waiter.due < this.timerDue) this.arm(waiter.due);', replace: '' },
      { file: CHANNEL, find: 'this.wake(budget > 0 ? budget : (this.parked[0]?.place.need ?? 1));', replace: 'void budget;' },
    ],
  },
  {
    checker: 'liveness',
    mutant: 'a campaign that wins publishes no leader change: observe() of every process misses the elections after the first',
    scenario: 'leader-election',
    mutations: [{ file: 'src/leader-election/scripts.ts', find: "  publish(term .. ' ' .. identity)\n", replace: '' }],
  },
  {
    checker: 'hygiene',
    mutant: 'a channel left by its last waiter is never unsubscribed (no linger end): subscriptions are left behind',
    scenario: 'holder-kill',
    mutations: [{ file: CHANNELS, find: 'setTimeout(() => this.drop(channel), LINGER_MS)', replace: 'setTimeout(() => undefined, LINGER_MS)' }],
  },
  {
    checker: 'belief',
    mutant: 'the watchdog renews every lease/1.2 instead of every lease/3: a holder whose key expired early is told too late',
    scenario: 'key-expired-early',
    mutations: [{ file: 'src/watchdog/watchdog.ts', find: 'return this.leaseMs / 3;', replace: 'return this.leaseMs / 1.2;' }],
  },
];

/** How long one proof's run may take. */
const PROOF_TIMEOUT_MS = 300_000;

/** Runs the quick suite's `scenario` in the tree at `dir`; resolves with its JSON rows. */
function runSuite(dir: string, scenario: string): Promise<ScenarioResult[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/faults.ts', '--quick', '--json', '--only', scenario], { cwd: dir, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGINT'), PROOF_TIMEOUT_MS);
    child.once('error', reject);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as ScenarioResult));
    });
  });
}

/** Runs one proof. */
export async function prove(proof: Proof): Promise<ProofVerdict> {
  const started = performance.now();
  const rows = await withMutant(proof.mutations, (dir) => runSuite(dir, proof.scenario));
  const row = rows.find((r) => r.scenario === proof.scenario);
  const mine = row?.violations.filter((v) => v.startsWith(`${proof.checker}: `)) ?? [];
  const caught = row !== undefined && failedCheckers(row).includes(proof.checker);
  const verdict = !row ? 'no result (the run did not finish)' : caught ? mine.join('; ') : `passed${row.violations.length ? ` (other violations: ${row.violations.join('; ')})` : ''}`;
  return { checker: proof.checker, mutant: proof.mutant, scenario: proof.scenario, caught, verdict, durationMs: Math.round(performance.now() - started) };
}

/** Runs every proof (of `only` checkers, when given), one after another; reports each as it ends. */
export async function proveAll(only: readonly string[] | undefined, report: (v: ProofVerdict) => void): Promise<ProofVerdict[]> {
  const proofs = PROOFS.filter((p) => !only || only.includes(p.checker));
  for (const p of proofs) checkMutations(repoRoot, p.mutations);
  const verdicts: ProofVerdict[] = [];
  for (const proof of proofs) {
    const verdict = await prove(proof);
    verdicts.push(verdict);
    report(verdict);
  }
  return verdicts;
}

/** Checkers without a proof (`--prove` fails when there is one). */
export const uncoveredCheckers = (): Checker[] => (Object.keys(CHECKERS) as Checker[]).filter((c) => !PROOFS.some((p) => p.checker === c));

/** The proofs as a Markdown table (docs/reliability.md, between `<!-- proofs:begin -->` and `<!-- proofs:end -->`). */
export function proofsMarkdown(verdicts: readonly ProofVerdict[], when: Date): string {
  const cell = (s: string): string => s.replaceAll('|', '\\|').replaceAll('\n', ' ');
  return [
    `Run of ${when.toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run faults -- --prove\` (each mutant on the quick suite's scenario):`,
    '',
    '| checker | what it guards | mutant | scenario | verdict on the mutant |',
    '|---|---|---|---|---|',
    ...verdicts.map((v) => `| ${v.checker} | ${cell(CHECKERS[v.checker])} | ${cell(v.mutant)} | ${v.scenario} | ${v.caught ? '**failed**' : '**passed: not caught**'}: ${cell(v.verdict)} |`),
  ].join('\n');
}
