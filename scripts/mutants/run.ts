/**
 * `npm run mutants`: proves that every safety mechanism of relock is tested. For each entry of the
 * catalogue (catalogue.ts) it applies the mutation to a scratch copy of the tree (scratch.ts), runs the
 * entry's jest tests there, and reports `killed` (a test failed: it names the first one) or `survived`
 * (every test passed: the mechanism can be removed unnoticed). Exits 1 on any survivor, on an entry whose
 * tests did not run (a stale `-t` pattern, a suite that crashed), and, before running anything, on an
 * entry whose `find` text no longer occurs exactly once.
 *
 * Flags: `--quick` (the entries marked `quick`, the subset `.ci/run` runs), `--only id,id`, `--json` (the
 * results as JSON on stdout), `--baseline` (first runs each entry's tests without its mutation: they must
 * pass), `--write-docs` (rewrites the table in docs/reliability.md between its `mutants` markers). Runs one mutant at a time (each jest run uses the machine's two workers).
 *
 * `--lua [--sample N] [--seed S]` runs the generated Lua pass instead (lua-catalogue.ts): one mutant per
 * comparison, guard and write of every acquire, release and renew script, each on its primitive's tests;
 * `--sample N` runs N of them drawn with the seed S (default: today's UTC date), `--only` takes their
 * ids (`lock.acquire#3`). Every survivor is printed with its script, line and operator.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CATALOGUE, type CatalogueEntry } from './catalogue.js';
import { luaCatalogue, sample, type LuaEntry } from './lua-catalogue.js';
import { checkMutations, MutationNotApplicableError, repoRoot, withMutant } from './scratch.js';

type Verdict = 'killed' | 'survived' | 'error';

interface Outcome {
  readonly id: string;
  readonly mechanism: string;
  readonly verdict: Verdict;
  /** The first failing test (`file › full name`), or what went wrong for `error`. */
  readonly by: string;
  readonly seconds: number;
}

/** The longest one mutant's jest run may take before it counts as an error. */
const RUN_LIMIT_MS = 10 * 60_000;

const DOCS = 'docs/reliability.md';
const BEGIN = '<!-- mutants:begin -->';
const END = '<!-- mutants:end -->';

interface Args {
  quick: boolean;
  only: string[] | undefined;
  json: boolean;
  writeDocs: boolean;
  baseline: boolean;
  lua: boolean;
  sample: number | undefined;
  seed: string;
}

/** The value of the flag at `argv[i]`: `--flag=value`, or the next argument. */
function value(argv: readonly string[], i: number): [string, number] {
  const arg = argv[i];
  const eq = arg.indexOf('=');
  return eq >= 0 ? [arg.slice(eq + 1), i] : [argv[i + 1] ?? '', i + 1];
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { quick: false, only: undefined, json: false, writeDocs: false, baseline: false, lua: false, sample: undefined, seed: new Date().toISOString().slice(0, 10) };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') args.quick = true;
    else if (arg === '--lua') args.lua = true;
    else if (arg === '--sample' || arg.startsWith('--sample=')) {
      const [text, next] = value(argv, i);
      i = next;
      args.sample = Number(text);
      if (!Number.isInteger(args.sample) || args.sample < 1) throw new Error(`--sample takes a whole number of mutants above 0, not ${JSON.stringify(text)}`);
    } else if (arg === '--seed' || arg.startsWith('--seed=')) {
      const [text, next] = value(argv, i);
      i = next;
      if (text === '') throw new Error('--seed takes a value');
      args.seed = text;
    }
    else if (arg === '--json') args.json = true;
    else if (arg === '--write-docs') args.writeDocs = true;
    else if (arg === '--baseline') args.baseline = true;
    else if (arg === '--only') args.only = (argv[++i] ?? '').split(',').filter((id) => id !== '');
    else if (arg.startsWith('--only=')) args.only = arg.slice('--only='.length).split(',').filter((id) => id !== '');
    else throw new Error(`unknown argument ${arg} (expected --quick, --only id,id, --json, --write-docs, --baseline, --lua, --sample N, --seed S)`);
  }
  if (!args.lua && (args.sample !== undefined || argv.some((a) => a.startsWith('--seed')))) throw new Error('--sample and --seed go with --lua');
  if (args.lua && (args.quick || args.writeDocs)) throw new Error('--quick and --write-docs are for the written catalogue, not --lua (its survivors are triaged by hand in docs/reliability.md)');
  return args;
}

function select(args: Args): CatalogueEntry[] {
  if (!args.only) return CATALOGUE.filter((entry) => !args.quick || entry.quick);
  const unknown = args.only.filter((id) => !CATALOGUE.some((entry) => entry.id === id));
  if (unknown.length > 0) throw new Error(`no such mutant: ${unknown.join(', ')} (known: ${CATALOGUE.map((e) => e.id).join(', ')})`);
  return CATALOGUE.filter((entry) => args.only!.includes(entry.id));
}

/** Every entry's text must occur exactly once: a stale entry fails the run before anything runs. */
function checkAll(): void {
  const stale: string[] = [];
  const ids = new Set<string>();
  for (const entry of CATALOGUE) {
    if (ids.has(entry.id)) stale.push(`${entry.id}: duplicate id`);
    ids.add(entry.id);
    try {
      checkMutations(repoRoot, [entry]);
    } catch (error) {
      if (!(error instanceof MutationNotApplicableError)) throw error;
      stale.push(`${entry.id}: ${error.message}`);
    }
  }
  if (stale.length > 0) throw new Error(`stale mutation entries (update scripts/mutants/catalogue.ts):\n  ${stale.join('\n  ')}`);
}

interface JestReport {
  numTotalTests: number;
  numFailedTests: number;
  numPassedTests: number;
  testResults: Array<{ name: string; status: string; message: string; assertionResults: Array<{ fullName: string; status: string }> }>;
}

/** Runs jest in `dir` on the entry's tests; resolves to its JSON report, or undefined when it wrote none. */
function runJest(dir: string, entry: CatalogueEntry, outputFile: string): Promise<JestReport | undefined> {
  // --forceExit: a test a mutant fails stops half-way and may leave a client open (a GLIDE client keeps
  // the process alive, a stale watchdog can keep a model-test acquire waiting); the report is written by then.
  const args = [join(dir, 'node_modules/jest/bin/jest.js'), '--ci', '--json', '--forceExit', `--outputFile=${outputFile}`, ...entry.tests];
  if (entry.pattern) args.push('-t', entry.pattern);
  const env = { ...process.env, NODE_OPTIONS: '--experimental-vm-modules --disable-warning=ExperimentalWarning --unhandled-rejections=strict' };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-20_000);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS);
    child.on('error', reject);
    child.on('close', () => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(readFileSync(outputFile, 'utf8')) as JestReport);
      } catch {
        if (process.env.MUTANTS_VERBOSE) process.stderr.write(stderr);
        resolve(undefined);
      }
    });
  });
}

/** The verdict of one jest report: the first failed test kills the mutant. */
function judge(report: JestReport | undefined, dir: string): { verdict: Verdict; by: string } {
  if (!report) return { verdict: 'error', by: 'jest wrote no report (crashed or timed out)' };
  for (const suite of report.testResults) {
    const failed = suite.assertionResults.find((a) => a.status === 'failed');
    if (failed) return { verdict: 'killed', by: `${suite.name.replace(`${dir}/`, '')} › ${failed.fullName}` };
  }
  const crashed = report.testResults.find((suite) => suite.status === 'failed');
  if (crashed) return { verdict: 'error', by: `${crashed.name.replace(`${dir}/`, '')} failed to run: ${crashed.message.split('\n').find((l) => l.trim() !== '')?.trim() ?? ''}` };
  if (report.numPassedTests === 0) return { verdict: 'error', by: 'no test ran (stale -t pattern?)' };
  return { verdict: 'survived', by: `${report.numPassedTests} tests passed` };
}

/**
 * Runs the entry's tests on a scratch copy with its mutation applied. With `baseline`, first on a copy
 * without it: they must pass there, or a failure would prove nothing (a flaky or broken test).
 */
async function runOne(entry: CatalogueEntry, baseline: boolean): Promise<Outcome> {
  const started = performance.now();
  const outputFile = join(tmpdir(), `relock-mutants-${process.pid}-${entry.id}.json`);
  const run = (mutated: boolean): Promise<{ verdict: Verdict; by: string }> => {
    rmSync(outputFile, { force: true });
    return withMutant(mutated ? [entry] : [], async (dir) => judge(await runJest(dir, entry, outputFile), dir));
  };
  const outcome = (verdict: Verdict, by: string): Outcome => ({ id: entry.id, mechanism: entry.mechanism, verdict, by, seconds: Math.round((performance.now() - started) / 1000) });
  try {
    if (baseline) {
      const clean = await run(false);
      if (clean.verdict !== 'survived') return outcome('error', `fails without the mutation: ${clean.by}`);
    }
    const { verdict, by } = await run(true);
    return outcome(verdict, by);
  } finally {
    rmSync(outputFile, { force: true });
  }
}

/** The results as a Markdown table. */
function table(outcomes: readonly Outcome[]): string {
  const cell = (text: string): string => text.replace(/\|/g, '\\|');
  const rows = outcomes.map((o) => `| \`${o.id}\` | ${cell(o.mechanism)} | ${o.verdict} | ${cell(o.by)} | ${o.seconds} s |`);
  return ['| mutant | mechanism removed | result | killed by | time |', '|---|---|---|---|---|', ...rows].join('\n');
}

function writeDocs(outcomes: readonly Outcome[], totalSeconds: number): void {
  const path = join(repoRoot, DOCS);
  const text = readFileSync(path, 'utf8');
  const from = text.indexOf(BEGIN);
  const to = text.indexOf(END);
  if (from < 0 || to < from) throw new Error(`${DOCS} has no ${BEGIN} … ${END} section`);
  const killed = outcomes.filter((o) => o.verdict === 'killed').length;
  const body = `${table(outcomes)}\n\n${killed} of ${outcomes.length} mutants killed, in ${totalSeconds} s (\`npm run mutants\`, one mutant at a time, on ${new Date().toISOString().slice(0, 10)}).`;
  writeFileSync(path, `${text.slice(0, from + BEGIN.length)}\n${body}\n${text.slice(to)}`);
}

/** Runs `entries` one at a time, telling progress on stderr unless `--json`. */
async function runAll(entries: readonly CatalogueEntry[], args: Args): Promise<{ outcomes: Outcome[]; totalSeconds: number }> {
  const started = performance.now();
  const outcomes: Outcome[] = [];
  for (const entry of entries) {
    if (!args.json) process.stderr.write(`${entry.id} … `);
    const outcome = await runOne(entry, args.baseline);
    outcomes.push(outcome);
    if (!args.json) process.stderr.write(`${outcome.verdict} (${outcome.seconds} s)\n`);
  }
  return { outcomes, totalSeconds: Math.round((performance.now() - started) / 1000) };
}

/** `--lua`: the generated Lua mutants (all, `--only` ones, or a `--sample`), each survivor with its script, line and operator. */
async function mainLua(args: Args): Promise<number> {
  const generated = await luaCatalogue();
  if (generated.length > 0) checkMutations(repoRoot, [generated[0]]);
  let entries: LuaEntry[] = generated;
  if (args.only) {
    const unknown = args.only.filter((id) => !generated.some((entry) => entry.id === id));
    if (unknown.length > 0) throw new Error(`no such generated mutant: ${unknown.join(', ')} (ids are <script>#<n>, such as ${generated[0]?.id})`);
    entries = generated.filter((entry) => args.only!.includes(entry.id));
  }
  if (args.sample !== undefined) entries = sample(entries, args.sample, args.seed);
  const scripts = new Set(generated.map((entry) => entry.script)).size;
  const drawn = args.sample === undefined ? '' : `, a sample drawn with seed ${JSON.stringify(args.seed)}`;
  if (!args.json) process.stderr.write(`${generated.length} Lua mutants generated over ${scripts} scripts; running ${entries.length}${drawn}\n`);
  const { outcomes, totalSeconds } = await runAll(entries, args);
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  const count = (verdict: Verdict): number => outcomes.filter((o) => o.verdict === verdict).length;
  const bad = outcomes.filter((o) => o.verdict !== 'killed').map((o) => ({ ...o, ...byId.get(o.id)!, verdict: o.verdict, by: o.by }));
  if (args.json) {
    const summary = { generated: generated.length, scripts, run: outcomes.length, seed: args.sample === undefined ? undefined : args.seed, killed: count('killed'), survived: count('survived'), errors: count('error') };
    process.stdout.write(`${JSON.stringify({ ...summary, outcomes, notKilled: bad.map(({ id, script, line, operator, text, verdict, by }) => ({ id, script, line, operator, text, verdict, by })), totalSeconds }, null, 2)}\n`);
  } else {
    const lines = bad.map((o) => `${o.verdict.padEnd(8)} ${o.id.padEnd(28)} ${o.script} line ${o.line}: ${o.operator}\n${' '.repeat(38)}in \`${o.text}\`${o.verdict === 'error' ? ` (${o.by})` : ''}`);
    process.stdout.write(
      `\n${lines.join('\n')}${lines.length > 0 ? '\n\n' : ''}${generated.length} generated, ${outcomes.length} run${drawn}: ${count('killed')} killed, ${count('survived')} survived, ${count('error')} errors, in ${totalSeconds} s\n`,
    );
  }
  return bad.length === 0 ? 0 : 1;
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (args.lua) return mainLua(args);
  checkAll();
  const { outcomes, totalSeconds } = await runAll(select(args), args);
  const bad = outcomes.filter((o) => o.verdict !== 'killed');
  if (args.json) process.stdout.write(`${JSON.stringify({ outcomes, totalSeconds }, null, 2)}\n`);
  else process.stdout.write(`\n${table(outcomes)}\n\n${outcomes.length - bad.length} of ${outcomes.length} killed in ${totalSeconds} s\n`);
  if (args.writeDocs) writeDocs(outcomes, totalSeconds);
  return bad.length === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 2;
  },
);
