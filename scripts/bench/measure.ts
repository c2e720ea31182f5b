/**
 * Measuring tools of the benchmark: HDR latency histograms, task loops with a deadline, medians of
 * rounds, and Redis command counters from `INFO commandstats`.
 */
import { build, type Histogram } from 'hdr-histogram-js';

/** Figures of one library in one scenario (or one round of it), by name: `cyclesPerSec`, `waitP99Ms`… */
export type Figures = Record<string, number>;

export const now = (): number => performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Latencies in milliseconds, kept in an HDR histogram with microsecond resolution (3 significant digits). */
export class Latencies {
  private readonly histogram: Histogram = build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 3 });

  record(ms: number): void {
    this.histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  get count(): number {
    return this.histogram.totalCount;
  }

  /** The `q`-th percentile (0–100) in ms; NaN when nothing was recorded. */
  percentile(q: number): number {
    return this.count === 0 ? NaN : this.histogram.getValueAtPercentile(q) / 1000;
  }

  get maxMs(): number {
    return this.count === 0 ? NaN : this.histogram.maxValue / 1000;
  }

  /** `{ <prefix>P50Ms, <prefix>P99Ms, <prefix>MaxMs }` (and P90, P999 when `all`). */
  figures(prefix: string, all = false): Figures {
    const out: Figures = { [`${prefix}P50Ms`]: this.percentile(50) };
    if (all) out[`${prefix}P90Ms`] = this.percentile(90);
    out[`${prefix}P99Ms`] = this.percentile(99);
    if (all) out[`${prefix}P999Ms`] = this.percentile(99.9);
    out[`${prefix}MaxMs`] = this.maxMs;
    return out;
  }
}

/**
 * Runs `tasks` concurrent loops of `body(task)` until `deadline` (monotonic ms): a loop starts no new
 * iteration after it. Resolves when every loop has finished its last iteration.
 */
export async function loop(tasks: number, deadline: number, body: (task: number) => Promise<void>): Promise<void> {
  await Promise.all(
    Array.from({ length: tasks }, async (_, task) => {
      while (now() < deadline) await body(task);
    }),
  );
}

/** The median of `values` (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Per figure, the median over rounds. */
export function medianOfRounds(rounds: readonly Figures[]): Figures {
  const names = new Set(rounds.flatMap((r) => Object.keys(r)));
  return Object.fromEntries([...names].map((name) => [name, median(rounds.map((r) => r[name] ?? NaN))]));
}

/** Calls and microseconds per command name, from `INFO commandstats`. */
export type CommandStats = Map<string, { calls: number; usec: number }>;

export function parseCommandStats(info: string): CommandStats {
  const stats: CommandStats = new Map();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    stats.set(match[1].toLowerCase(), { calls: Number(match[2]), usec: Number(match[3]) });
  }
  return stats;
}

/** What Redis did between two snapshots. */
export interface CommandDelta {
  /** Calls of the library's request commands (what it sent). */
  requests: number;
  /** Every call, the ones scripts make inside Redis included (INFO itself excluded). */
  calls: number;
  /** Server time of the requests, in µs (a script's time includes the calls it makes). */
  requestUsec: number;
  /** Calls and µs per command name. */
  byCommand: CommandStats;
}

export function commandDelta(before: CommandStats, after: CommandStats, requestCommands: readonly string[]): CommandDelta {
  const delta: CommandDelta = { requests: 0, calls: 0, requestUsec: 0, byCommand: new Map() };
  for (const [name, value] of after) {
    if (name === 'info') continue;
    const prior = before.get(name) ?? { calls: 0, usec: 0 };
    const calls = value.calls - prior.calls;
    if (calls === 0) continue;
    const usec = value.usec - prior.usec;
    delta.byCommand.set(name, { calls, usec });
    delta.calls += calls;
    if (requestCommands.includes(name)) {
      delta.requests += calls;
      delta.requestUsec += usec;
    }
  }
  return delta;
}

/** `evalsha 2.00/acquire (11.3 µs/call), hget 1.00/acquire (…)`: a delta per acquisition, busiest first. */
export function describeDelta(delta: CommandDelta, acquisitions: number): string {
  return [...delta.byCommand]
    .sort((a, b) => b[1].calls - a[1].calls)
    .map(([name, { calls, usec }]) => `${name} ${(calls / acquisitions).toFixed(2)}/acquire (${(usec / calls).toFixed(1)} µs/call)`)
    .join(', ');
}
