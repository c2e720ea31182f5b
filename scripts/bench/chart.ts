/**
 * The latency chart of docs/benchmarks.md, drawn as SVG from a run's results (no dependencies):
 * grouped bars per percentile, one bar per library, on a log scale in milliseconds.
 */
import type { Impl } from './adapters/types.js';
import type { Results } from './goals.js';

export interface Panel {
  title: string;
  /** Group labels, e.g. p50 … max, in the order of each series' values. */
  labels: readonly string[];
  series: ReadonlyArray<{ impl: Impl; values: readonly number[] }>;
}

const COLORS: Record<Impl, string> = {
  relock: '#1b7837',
  'relock-base': '#a6dba0',
  'relock-ioredis': '#7fbc41',
  'relock-glide': '#5aae61',
  'non-reentrant': '#00441b',
  floor: '#888888',
  'floor-ioredis': '#999999',
  'floor-setnx': '#aaaaaa',
  'floor-glide': '#bbbbbb',
  'lua-floor': '#666666',
  'hash-floor': '#777777',
  redlock: '#c51b7d',
  'redlock-tuned': '#8e0152',
  'sesamecare-redlock': '#e08fbf',
  'redis-semaphore': '#2166ac',
  'redis-semaphore-tuned': '#053061',
};

const PERCENTILES: ReadonlyArray<[string, string]> = [['p50', 'P50'], ['p90', 'P90'], ['p99', 'P99'], ['p99.9', 'P999'], ['max', 'Max']];

/** The panels for scenarios 3 (wait) and 4 (hand-off) of `results`, when they were run. */
export function latencyPanels(results: Results): Panel[] {
  const panel = (scenario: string, prefix: string, title: string): Panel | undefined => {
    const rows = (results.get(scenario) ?? []).filter((r) => !r.skipped);
    if (rows.length === 0) return undefined;
    return {
      title,
      labels: PERCENTILES.map(([label]) => label),
      series: rows.map((r) => ({ impl: r.impl, values: PERCENTILES.map(([, suffix]) => r.figures[`${prefix}${suffix}Ms`] ?? NaN) })),
    };
  };
  return [
    panel('contention', 'wait', 'Scenario 3: wait for the lock, 8 tasks, 1 ms hold, 5 ms think (ms, log scale)'),
    panel('waiters', 'handoff', 'Scenario 4: hand-off after a release, 1000 waiters in 4 processes (ms, log scale)'),
  ].filter((p): p is Panel => p !== undefined);
}

/** A bar's value label: 3 significant digits at most, no exponent. */
const compact = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3));

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function latencyChart(panels: readonly Panel[], caption: string): string {
  const width = 920;
  const panelHeight = 300;
  const left = 70;
  const right = 20;
  const top = 60;
  const legendHeight = 30;
  const height = top + panels.length * (panelHeight + 40) + legendHeight;
  const impls = [...new Set(panels.flatMap((p) => p.series.map((s) => s.impl)))];
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">Lock wait latency percentiles per library</text>`,
    `<text x="${width / 2}" y="40" text-anchor="middle" fill="#555">${escape(caption)}</text>`,
  ];
  panels.forEach((panel, p) => {
    const y0 = top + p * (panelHeight + 40) + 20;
    const plotHeight = panelHeight - 40;
    const values = panel.series.flatMap((s) => s.values).filter((v) => v > 0 && Number.isFinite(v));
    const lo = Math.floor(Math.log10(Math.min(...values)));
    const hi = Math.ceil(Math.log10(Math.max(...values)));
    const span = Math.max(1, hi - lo);
    const yOf = (v: number): number => y0 + plotHeight - ((Math.log10(v) - lo) / span) * plotHeight;
    out.push(`<text x="${left}" y="${y0 - 8}" font-weight="bold">${escape(panel.title)}</text>`);
    for (let e = lo; e <= hi; e++) {
      const y = yOf(10 ** e);
      out.push(`<line x1="${left}" x2="${width - right}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
      out.push(`<text x="${left - 6}" y="${y + 4}" text-anchor="end" fill="#555">${10 ** e >= 1 ? 10 ** e : (10 ** e).toFixed(-e)}</text>`);
    }
    const groupWidth = (width - left - right) / panel.labels.length;
    const barWidth = Math.min(28, (groupWidth - 20) / panel.series.length);
    panel.labels.forEach((label, g) => {
      const gx = left + g * groupWidth + (groupWidth - barWidth * panel.series.length) / 2;
      panel.series.forEach((s, i) => {
        const v = s.values[g];
        if (!(v > 0) || !Number.isFinite(v)) return;
        const y = yOf(v);
        const x = gx + i * barWidth;
        out.push(`<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(barWidth - 2).toFixed(1)}" height="${(y0 + plotHeight - y).toFixed(1)}" fill="${COLORS[s.impl]}"><title>${s.impl} ${label}: ${v.toFixed(2)} ms</title></rect>`);
        out.push(`<text x="${(x + (barWidth - 2) / 2).toFixed(1)}" y="${(y - 3).toFixed(1)}" text-anchor="middle" font-size="9" fill="#333">${compact(v)}</text>`);
      });
      out.push(`<text x="${left + g * groupWidth + groupWidth / 2}" y="${y0 + plotHeight + 16}" text-anchor="middle">${label}</text>`);
    });
    out.push(`<line x1="${left}" x2="${width - right}" y1="${y0 + plotHeight}" y2="${y0 + plotHeight}" stroke="#333"/>`);
  });
  const ly = height - legendHeight + 10;
  impls.forEach((impl, i) => {
    const x = left + i * 170;
    out.push(`<rect x="${x}" y="${ly - 10}" width="12" height="12" fill="${COLORS[impl]}"/><text x="${x + 18}" y="${ly}">${impl}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}
