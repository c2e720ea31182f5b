import type { CommandSpec } from '../args.js';
import { EXIT } from '../errors.js';
import { COMMON_OPTIONS, wholeNumber } from '../options.js';
import { printJson, printLines, progress, showProgress } from '../output.js';
import { table } from '../render.js';
import { withTarget } from '../run.js';
import { list, type ListOptions } from './list.js';

/** One election found by `relock leaders` (also its JSON output). */
export interface LeaderRow {
  readonly name: string;
  /** The identity the leader published, or `null` when nobody leads. */
  readonly leader: string | null;
  /** The leader's term (a string: it may exceed 2^53), or `null`. */
  readonly term: string | null;
  /** Ms left on the leader's lease, or `null`. */
  readonly remainingMs: number | null;
  /** The last term handed out (the election's counter). */
  readonly lastTerm: string | null;
}

/**
 * `relock leaders [pattern]`: the leader elections (`getLeaderElection`) under `--prefix` whose names
 * match `pattern`, found as `relock list --type leader-election` finds them, with who leads, the term
 * and the lease left.
 */
export const leadersCommand: CommandSpec<Omit<ListOptions, 'type'>> = {
  name: 'leaders',
  description: 'show the leader elections and who leads each',
  argument: { name: 'pattern', description: 'a Redis glob over election names', required: false, default: '*' },
  options: [...COMMON_OPTIONS, { flags: '--scan-count <n>', description: 'the COUNT hint of each SCAN call', parse: wholeNumber(1), default: 1000 }],
  run(pattern, options) {
    return withTarget(options, async (target) => {
      const found = await list(target, pattern, options, progress(showProgress(options.json)));
      const rows: LeaderRow[] = found.objects
        .filter((o) => o.type === 'leader-election')
        .map((o) => {
          const d = found.descriptions.get(o.name)!;
          return { name: o.name, leader: d.leader?.identity ?? null, term: d.leader?.term ?? null, remainingMs: d.leader?.remainingMs ?? null, lastTerm: d.term ?? null };
        });
      if (options.json) printJson({ pattern, prefix: options.prefix, elections: rows });
      else if (rows.length === 0) printLines(['no leader elections found']);
      else {
        const cells = rows.map((r) => [r.name, r.leader ?? '(no leader)', r.term === null ? '-' : `term ${r.term}`, r.remainingMs === null ? '-' : `${r.remainingMs} ms left`]);
        printLines(table([['ELECTION', 'LEADER', 'TERM', 'LEASE'], ...cells]));
      }
      return EXIT.ok;
    });
  },
};
