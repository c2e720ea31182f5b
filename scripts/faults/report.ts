/**
 * The results as a console table and as the Markdown table of docs/reliability.md, which `--report FILE`
 * rewrites between `<!-- faults:begin -->` and `<!-- faults:end -->` with the versions and the date
 * (`--prove --report FILE`: the proofs, between `<!-- proofs:begin -->` and `<!-- proofs:end -->`).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { createRequire } from 'node:module';
import { clientVersion, type FaultClient } from './clients.js';
import type { ScenarioResult } from './result.js';
import { scenarios } from './scenarios/index.js';


const ms = (v: number | null): string => (v === null ? '–' : String(Math.round(v)));

function overlaps(r: ScenarioResult): string {
  const expected = r.expectedOverlaps === 0 ? '0' : `${r.expectedOverlaps} (≤ ${ms(r.maxExpectedOverlapMs)} ms, ${ms(r.excusedOverlapMs)} ms in all: ${Object.entries(r.causes).map(([c, n]) => `${c} ${n}`).join(', ')})`;
  return `${r.unexpectedOverlaps}${r.unexpectedOverlaps ? ` (≤ ${ms(r.maxUnexpectedOverlapMs)} ms)` : ''} / ${expected}`;
}

function row(r: ScenarioResult): string[] {
  if (r.skipped) return [r.scenario, `skipped: ${r.skipped}`, ...HEADER.slice(2).map(() => '')];
  const detection = r.lossDetectionMaxMs === null ? '–' : `${ms(r.lossDetectionMs)} / ${ms(r.lossDetectionMaxMs)} (≤ ${r.lossDetectionBoundMs})`;
  return [
    r.scenario,
    String(r.runs),
    String(r.faultsInjected),
    String(r.sections),
    ms(r.expectedOverlapWindowMs),
    overlaps(r),
    `${r.staleWritesAccepted} / ${r.staleWritesRejected}`,
    `${r.unexcusedLostUpdates} / ${r.lostUpdates}`,
    `${ms(r.recoveryP50Ms)} / ${ms(r.recoveryP99Ms)}`,
    detection,
    String(r.leaks),
    (r.durationMs / 1000).toFixed(1),
  ];
}

const HEADER = [
  'scenario', 'runs', 'faults', 'sections', 'overlap window ms', 'overlaps unexpected / excused', 'stale writes accepted / rejected', 'lost updates unexcused / all',
  'recovery p50 / p99 ms', 'loss detection p50 / max (bound) ms', 'leaks', 'duration s',
];

export function printSummary(results: readonly ScenarioResult[]): void {
  const rows = [HEADER, ...results.map(row)];
  const widths = HEADER.map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd());
}

function versions(client: FaultClient): string {
  const require = createRequire(import.meta.url);
  const redis = execFileSync(process.env.REDIS_SERVER_BIN ?? 'redis-server', ['--version']).toString().match(/v=(\S+)/)?.[1] ?? '?';
  const relock = (require('../../package.json') as { version: string }).version;
  return `relock ${relock}, Node ${process.version}, ${clientVersion(client)}, Redis ${redis}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}`;
}

/** When a run started, and the machine's 1-minute load average then (`os.loadavg()`). */
export interface RunMeta {
  readonly quick: boolean;
  /** The client relock was given (`--client`). */
  readonly client: FaultClient;
  readonly startedAt: Date;
  readonly loadAtStart: number;
}

/** The Markdown block (table and notes) for `results`; the run's length and the load at its end are taken now. */
export function markdown(results: readonly ScenarioResult[], meta: RunMeta): string {
  const minutes = (Date.now() - meta.startedAt.getTime()) / 60_000;
  const lines = [
    `Run of ${meta.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC (${minutes.toFixed(1)} min, ${results.length} scenarios), \`npm run faults${meta.quick || meta.client !== 'node-redis' ? ' --' : ''}${meta.quick ? ' --quick' : ''}${meta.client !== 'node-redis' ? ` --client ${meta.client}` : ''}\`, ${versions(meta.client)}.`,
    `The machine was shared with other work (2 cores; load average ${meta.loadAtStart.toFixed(2)} at the start, ${(loadavg()[0] ?? 0).toFixed(2)} at the end): timings are upper bounds, not benchmarks.`,
    '',
    `| ${HEADER.join(' | ')} |`,
    `|${HEADER.map(() => '---').join('|')}|`,
    ...results.map((r) => `| ${row(r).join(' | ')} |`),
    '',
    'What each scenario does and why its overlaps are (or are not) expected:',
    '',
    ...results.map((r) => {
      const s = scenarios.find((x) => x.name === r.scenario);
      const extra = Object.entries(r.extra).filter(([k]) => k !== 'artifacts').map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : String(v as string | number | boolean)}`);
      const excuses = s && 'excuses' in s && s.excuses?.length ? s.excuses.join(', ') : 'none';
      return `- **${r.scenario}**: ${s?.title ?? r.title}. Expected overlaps: ${s?.expect ?? '?'}. Excuses declared: ${excuses}.${extra.length ? ` Figures: ${extra.join(', ')}.` : ''}${r.ok ? '' : ` **Violations: ${r.violations.join('; ')}**`}`;
    }),
  ];
  return lines.join('\n');
}

/** Rewrites the block between `<!-- <name>:begin -->` and `<!-- <name>:end -->` of `file` with `content`. */
export function replaceBlock(file: string, name: string, content: string): void {
  const [open, close] = [`<!-- ${name}:begin -->`, `<!-- ${name}:end -->`];
  const text = readFileSync(file, 'utf8');
  const begin = text.indexOf(open);
  const end = text.indexOf(close);
  if (begin < 0 || end < begin) throw new Error(`${file} has no ${open} … ${close} block`);
  writeFileSync(file, `${text.slice(0, begin + open.length)}\n${content}\n${text.slice(end)}`);
}

/** Rewrites the results block of `file` (docs/reliability.md): `faults`, or `faults-<client>` for another client than node-redis. */
export function writeReport(file: string, results: readonly ScenarioResult[], meta: RunMeta): void {
  replaceBlock(file, meta.client === 'node-redis' ? 'faults' : `faults-${meta.client}`, markdown(results, meta));
}
