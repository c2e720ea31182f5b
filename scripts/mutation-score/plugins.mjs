/**
 * Stryker plugins of `npm run mutation-score`.
 *
 * `relock-sample`, an ignorer (`ignorers: ['relock-sample']`): Stryker's `mutate`
 * ranges select a node and everything nested in it, so a range drawn for one mutant also holds the mutants
 * of the node's sub-expressions. This ignorer marks those nested nodes `Ignored` (not run) unless a sampled
 * mutant lies in them. The sample comes from the JSON file named by `RELOCK_MUTATION_SAMPLE`.
 *
 * `relock-sample`, a checker (`checkers: ['relock-sample', 'typescript']`): a range drawn for one mutant
 * also selects the mutants of the other mutators on the very same node (a `<` drawn brings `<=` and `>=`
 * with it), which an ignorer cannot tell apart (it sees nodes, not mutants). This checker, run before the
 * TypeScript checker, fails every mutant that is not in the sample with the reason "not in the sample",
 * so that Stryker neither type-checks nor runs it (it is reported `CompileError`, which run.ts reads only
 * for sampled mutants). Before it, a sample of 100 ran 178 mutants (2026-12-06).
 *
 * `relock-progress`, a reporter: appends each mutant's result, as Stryker reports it, to the JSON-lines
 * file named by `RELOCK_MUTATION_PROGRESS`, so that a run stopped before its end still has its results.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { CheckStatus } from '@stryker-mutator/api/check';
import { declareClassPlugin, declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin';

const sample = JSON.parse(readFileSync(process.env.RELOCK_MUTATION_SAMPLE ?? '', 'utf8'));

/** Whether location `outer` includes `inner` (Babel's 1-based lines, 0-based columns). */
function includes(outer, inner) {
  const startsBefore = outer.start.line < inner.start.line || (outer.start.line === inner.start.line && outer.start.column <= inner.start.column);
  const endsAfter = outer.end.line > inner.end.line || (outer.end.line === inner.end.line && outer.end.column >= inner.end.column);
  return startsBefore && endsAfter;
}

/** Whether Stryker's `mutant` (absolute file name, 0-based lines and columns) is sampled mutant `m`. */
function isSampled(mutant, m) {
  const { start, end } = mutant.location;
  return (
    mutant.fileName.endsWith(`/${m.file}`) && mutant.mutatorName === m.mutatorName && mutant.replacement === m.replacement &&
    start.line + 1 === m.start.line && start.column === m.start.column && end.line + 1 === m.end.line && end.column === m.end.column
  );
}

function fileOf(path) {
  const name = path.hub?.file?.opts?.filename;
  return typeof name === 'string' ? relative(process.cwd(), name) : undefined;
}

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'relock-sample', {
    shouldIgnore(path) {
      const loc = path.node.loc;
      const file = fileOf(path);
      if (!loc || file === undefined) return undefined;
      const ranges = sample.filter((m) => m.file === file);
      const nested = ranges.some((m) => includes(m, loc)) && !ranges.some((m) => includes(loc, m));
      return nested ? 'nested in a sampled mutant, not sampled itself' : undefined;
    },
  }),
  declareClassPlugin(PluginKind.Checker, 'relock-sample', class {
    static inject = [];
    async init() {}
    async check(mutants) {
      return Object.fromEntries(
        mutants.map((mutant) => [
          mutant.id,
          sample.some((m) => isSampled(mutant, m)) ? { status: CheckStatus.Passed } : { status: CheckStatus.CompileError, reason: 'not in the sample' },
        ]),
      );
    }
  }),
  declareClassPlugin(PluginKind.Reporter, 'relock-progress', class {
    static inject = [];
    onMutantTested(result) {
      const { fileName, mutatorName, replacement, location, status } = result;
      appendFileSync(process.env.RELOCK_MUTATION_PROGRESS ?? '', `${JSON.stringify({ file: relative(process.cwd(), fileName), mutatorName, replacement, location, status })}\n`);
    }
  }),
];
