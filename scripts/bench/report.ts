/**
 * Printing a run: aligned text tables for the terminal, JSON lines (`--json`), and the Markdown block
 * written into docs/benchmarks.md (`--docs`).
 */
import type { Environment } from './env.js';
import type { GoalResult, Results } from './goals.js';
import type { Figures } from './measure.js';
import type { Row, Scenario } from './scenario.js';

export function formatNumber(value: number | undefined, decimals = 0): string {
  if (value === undefined || Number.isNaN(value)) return '–';
  return value.toLocaleString('en-US', { maximumFractionDigits: decimals, minimumFractionDigits: decimals });
}

export function environmentLine(env: Environment): string {
  return `Node ${env.node}, Redis ${env.redis} (${env.redisSource}), ${env.cpu}, ${env.cores} cores, ${env.memoryGb} GB, load average ${env.loadAverage} at start`;
}

export function versionsLine(env: Environment): string {
  return Object.entries(env.versions).map(([name, version]) => `${name} ${version}`).join(', ');
}

/** The table of one scenario as rows of cells, the heading row first. */
function cells(scenario: Scenario, rows: readonly Row[]): string[][] {
  const head = ['library', ...scenario.columns.map((c) => c.heading)];
  const body = rows.map((row) => [
    row.impl,
    ...(row.skipped
      ? scenario.columns.map((c, i) => (c.figure in row.figures ? formatNumber(row.figures[c.figure], c.decimals) : i === scenario.columns.length - 1 ? `skipped: ${row.skipped}` : ''))
      : scenario.columns.map((c) => formatNumber(row.figures[c.figure], c.decimals))),
  ]);
  return [head, ...body];
}

export function textTable(scenario: Scenario, rows: readonly Row[]): string {
  const table = cells(scenario, rows);
  const isNote = (cell: string): boolean => cell.startsWith('skipped');
  const widths = table[0].map((_, i) => Math.max(...table.map((r) => (isNote(r[i]) ? 0 : r[i].length))));
  const lines = table.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : isNote(cell) ? cell : cell.padStart(widths[i]))).join('  ').trimEnd());
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  return [`Scenario ${scenario.id}: ${scenario.title}`, `  ${scenario.description}`, ...lines.map((l) => `  ${l}`)].join('\n');
}

export function goalsText(goals: readonly GoalResult[]): string {
  const mark = (pass: boolean | undefined): string => (pass === undefined ? 'n/a ' : pass ? 'PASS' : 'FAIL');
  return ['Goals (issues 8, 12 and 31):', ...goals.map((g) => `  [${mark(g.pass)}] ${g.goal}: ${g.detail}`)].join('\n');
}

/** One JSON line per scenario and library, then the environment and the goals. */
export function jsonLines(env: Environment, scenarios: readonly Scenario[], results: Results, goals: readonly GoalResult[]): string[] {
  const round = (figures: Figures): Figures => Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, Number.isFinite(v) ? Math.round(v * 1000) / 1000 : v]));
  const lines = scenarios.flatMap((s) =>
    (results.get(s.key) ?? []).map((row) => JSON.stringify({ scenario: s.key, impl: row.impl, ...round(row.figures), ...(row.skipped ? { skipped: row.skipped } : {}) })),
  );
  lines.push(JSON.stringify({ scenario: 'environment', impl: 'none', ...env }));
  for (const goal of goals) lines.push(JSON.stringify({ scenario: 'goals', impl: 'relock', ...goal }));
  return lines;
}

/** The results block of docs/benchmarks.md. */
export function markdown(env: Environment, scenarios: readonly Scenario[], results: Results, goals: readonly GoalResult[], when: Date, quick: boolean, chartFile: string): string {
  const out: string[] = [
    `Run of ${when.toISOString().slice(0, 10)}${quick ? ' (`--quick`)' : ''}: ${environmentLine(env)}.`,
    '',
    `Libraries: ${versionsLine(env)}.`,
    '',
  ];
  for (const scenario of scenarios) {
    const rows = results.get(scenario.key);
    if (!rows) continue;
    const table = cells(scenario, rows);
    out.push(`### ${scenario.id}. ${scenario.title}`, '', scenario.description, '');
    out.push(`| ${table[0].join(' | ')} |`, `|${table[0].map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`);
    for (const row of table.slice(1)) out.push(`| ${row.join(' | ')} |`);
    out.push('');
  }
  out.push(`![Wait and hand-off latency percentiles per library](${chartFile})`, '', '### Goals', '', '| goal | result | figures |', '|---|---|---|');
  for (const g of goals) out.push(`| ${g.goal} | ${g.pass === undefined ? 'n/a' : g.pass ? '**pass**' : '**fail**'} | ${g.detail} |`);
  return out.join('\n');
}
