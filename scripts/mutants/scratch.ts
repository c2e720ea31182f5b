/**
 * Scratch copies of the source tree with deliberate breakage applied (mutants), shared by
 * `npm run mutants` and `npm run faults -- --prove`.
 *
 * A mutation is data: a file, a piece of text that must occur in it exactly once, and the text to put
 * instead. `withMutant()` copies the tree as it is on disk (tracked and untracked files that git does not
 * ignore, so uncommitted work is mutated too), links `node_modules` from the original, applies the
 * mutation, runs `fn` in the copy, and removes the copy whatever happens.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** One deliberate change to the source. */
export interface Mutation {
  /** Path relative to the repository root, such as `src/lock/scripts.ts`. */
  readonly file: string;
  /** Text that must occur exactly once in `file`. */
  readonly find: string;
  /** What replaces it. */
  readonly replace: string;
}

/** The repository root (the folder with package.json above scripts/). */
export const repoRoot = join(dirname(new URL(import.meta.url).pathname), '..', '..');

/** Thrown when a mutation cannot be applied as written (its text is missing or not unique). */
export class MutationNotApplicableError extends Error {
  constructor(mutation: Mutation, found: number) {
    super(`${mutation.file}: the text to replace occurs ${found} times (expected exactly once): ${JSON.stringify(mutation.find.slice(0, 120))}`);
    this.name = 'MutationNotApplicableError';
  }
}

/** Applies `mutations` to the tree at `root` in place. Throws `MutationNotApplicableError`. */
export function applyMutations(root: string, mutations: readonly Mutation[]): void {
  for (const mutation of mutations) {
    const path = join(root, mutation.file);
    const source = readFileSync(path, 'utf8');
    const found = source.split(mutation.find).length - 1;
    if (found !== 1) throw new MutationNotApplicableError(mutation, found);
    writeFileSync(path, source.replace(mutation.find, () => mutation.replace));
  }
}

/** Checks that every mutation applies to the tree at `root` (text present exactly once), without writing. */
export function checkMutations(root: string, mutations: readonly Mutation[]): void {
  for (const mutation of mutations) {
    const found = readFileSync(join(root, mutation.file), 'utf8').split(mutation.find).length - 1;
    if (found !== 1) throw new MutationNotApplicableError(mutation, found);
  }
}

/** The files of the tree at `root` that git tracks or would track (untracked but not ignored). */
function treeFiles(root: string): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, maxBuffer: 64 << 20 });
  // `node_modules` is linked, never copied (a link to it is listed as untracked: `node_modules/` ignores folders only).
  return out.toString('utf8').split('\0').filter((f) => f !== '' && f !== 'node_modules');
}

/**
 * A copy of the tree at `root` (default: this repository) with `mutations` applied, in a new temporary
 * folder whose `node_modules` links to the original's. Returns the copy's path; remove it with
 * `removeScratch()`.
 */
export function makeScratch(mutations: readonly Mutation[], root = repoRoot): string {
  const dir = mkdtempSync(join(tmpdir(), 'relock-mutant-'));
  try {
    for (const file of treeFiles(root)) {
      const target = join(dir, file);
      mkdirSync(dirname(target), { recursive: true });
      // A tracked file deleted in the working tree is skipped.
      try {
        cpSync(join(root, file), target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
    applyMutations(dir, mutations);
    return dir;
  } catch (error) {
    removeScratch(dir);
    throw error;
  }
}

/** Removes a folder made by `makeScratch()`. */
export function removeScratch(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Runs `fn` with a mutated copy of the tree (see `makeScratch`), removing the copy afterwards. */
export async function withMutant<T>(mutations: readonly Mutation[], fn: (dir: string) => Promise<T>, root = repoRoot): Promise<T> {
  const dir = makeScratch(mutations, root);
  try {
    return await fn(dir);
  } finally {
    removeScratch(dir);
  }
}
