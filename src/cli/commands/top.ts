import type { CommandSpec } from '../args.js';
import type { Target } from '../connect.js';
import type { Description } from '../describe.js';
import type { ObjectType } from '../detect.js';
import { EXIT } from '../errors.js';
import { COMMON_OPTIONS, TYPES_OPTION, wholeNumber, type CommonOptions } from '../options.js';
import { printJsonLine, printLines, progress } from '../output.js';
import { table, ttlText } from '../render.js';
import { withTarget } from '../run.js';
import { diff, tally, type Tally } from '../tally.js';
import { list, plainNote } from './list.js';

/** Options of `relock top`. */
export interface TopOptions extends CommonOptions {
  type?: ObjectType[];
  interval: number;
  limit: number;
  scanCount: number;
  duration?: number;
  count?: number;
}

/** One row of `top` (also its JSON). */
export interface TopRow {
  readonly name: string;
  readonly type: ObjectType;
  /** Lock owners (a read-write lock's readers and writer), or expirable permits taken. */
  readonly holders: number;
  /** Processes waiting: a fair lock's queue, else the subscribers of the object's channels. */
  readonly waiters: number;
  /** Whether the main key exists. */
  readonly exists: boolean;
  /** `PTTL` of the main key in ms, `null` when it has none or does not exist. */
  readonly ttlMs: number | null;
  /** Acquisitions seen between the last two refreshes, per second (`null` on the first refresh). */
  readonly acquisitionsPerSecond: number | null;
}

/**
 * `relock top [pattern]`: a live table of the busiest relock objects, refreshed every `--interval` ms:
 * holders, waiters, TTL and acquisitions per second, busiest first (waiters, then acquisitions, then
 * holders), at most `--limit` rows; with `--json`, one line per refresh. It reads what Redis shows
 * (`SCAN`, the objects' keys, `PUBSUB NUMSUB` / `SHARDNUMSUB`), so it needs nothing in the services: an
 * acquisition is a holder (or an expirable permit, or taken semaphore permits) that appeared between two
 * refreshes, so holds shorter than the interval are missed. Runs until Ctrl-C, `--duration` or `--count`.
 */
export const topCommand: CommandSpec<TopOptions> = {
  name: 'top',
  description: 'a live table of the busiest objects',
  argument: { name: 'pattern', description: 'a Redis glob over object names', required: false, default: '*' },
  options: [
    ...COMMON_OPTIONS,
    TYPES_OPTION,
    { flags: '--interval <ms>', description: 'refresh this often', parse: wholeNumber(100), default: 1000 },
    { flags: '--limit <n>', description: 'show at most this many objects', parse: wholeNumber(1), default: 20 },
    { flags: '--scan-count <n>', description: 'the COUNT hint of each SCAN call', parse: wholeNumber(1), default: 1000 },
    { flags: '--duration <ms>', description: 'stop after this many milliseconds', parse: wholeNumber(1) },
    { flags: '--count <n>', description: 'stop after this many refreshes', parse: wholeNumber(1) },
  ],
  run(pattern, options) {
    return withTarget(options, (target) => top(target, pattern, options));
  },
};

/** Refreshes until stopped; each refresh is printed as a table (cleared first in a terminal) or a JSON line. */
async function top(target: Target, pattern: string, options: TopOptions): Promise<number> {
  let stopped = false;
  let wake: () => void = () => {};
  const stop = (): void => {
    stopped = true;
    wake();
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];
  for (const signal of signals) process.once(signal, stop);
  const until = options.duration === undefined ? Infinity : performance.now() + options.duration;
  const terminal = process.stdout.isTTY === true && !options.json;
  let previous = new Map<string, Tally>();
  let previousAt = 0;
  try {
    for (let refresh = 1; !stopped; refresh++) {
      const started = performance.now();
      const found = await list(target, pattern, options, progress(false));
      const tallies = new Map([...found.descriptions].map(([name, d]) => [name, tally(d)]));
      const seconds = previousAt === 0 ? 0 : (started - previousAt) / 1000;
      const rows = found.objects.map((o) => row(found.descriptions.get(o.name)!, previous.get(o.name), tallies.get(o.name)!, seconds)).sort(busiestFirst).slice(0, options.limit);
      previous = tallies;
      previousAt = started;
      if (options.json) printJsonLine({ at: new Date().toISOString(), objects: found.objects.length, plainIntegers: found.plainIntegers, rows });
      else printLines([...(terminal ? ['\x1b[H\x1b[2J'] : refresh > 1 ? [''] : []), ...render(rows, found.objects.length, options.interval, found.plainIntegers)]);
      if ((options.count !== undefined && refresh >= options.count) || performance.now() >= until) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, Math.min(started + options.interval, until) - performance.now()));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    for (const signal of signals) process.off(signal, stop);
  }
  return EXIT.ok;
}

/** The row of the object described as `d`, with its acquisitions since `before` (`seconds` ago; 0: first refresh). */
function row(d: Description, before: Tally | undefined, now: Tally, seconds: number): TopRow {
  const acquisitions = seconds === 0 ? null : diff(before ?? tally(undefined), now).reduce((n, c) => n + (c.event === 'acquire' ? (c.permits ?? 1) : 0), 0);
  const waiters = d.queue ? d.queue.length : d.channels.reduce((n, c) => n + c.subscribers, 0);
  return {
    name: d.name,
    type: d.type,
    holders: now.holders.size,
    waiters,
    exists: d.exists,
    ttlMs: d.ttlMs,
    acquisitionsPerSecond: acquisitions === null ? null : Math.round((acquisitions / seconds) * 10) / 10,
  };
}

function busiestFirst(a: TopRow, b: TopRow): number {
  return b.waiters - a.waiters || (b.acquisitionsPerSecond ?? 0) - (a.acquisitionsPerSecond ?? 0) || b.holders - a.holders || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

function render(rows: readonly TopRow[], objects: number, interval: number, plainIntegers: number): string[] {
  const header = `relock top: ${objects} object${objects === 1 ? '' : 's'}, busiest ${rows.length} shown, every ${interval} ms (Ctrl-C to stop)${plainNote(plainIntegers)}`;
  const lines = rows.map((r) => [r.type, r.name, String(r.holders), String(r.waiters), ttlText(r.ttlMs, r.exists), r.acquisitionsPerSecond === null ? '-' : String(r.acquisitionsPerSecond)]);
  return [header, ...table([['TYPE', 'NAME', 'HOLDERS', 'WAITERS', 'TTL', 'ACQ/S'], ...lines])];
}
