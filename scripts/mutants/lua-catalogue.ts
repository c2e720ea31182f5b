/**
 * The generated Lua pass of `npm run mutants -- --lua`: catalogue entries made, not written. Every
 * acquire, release and renew script of every primitive (each `Script` exported by a `src/<folder>/scripts.ts`
 * whose name ends in one of `ROLES`) is read as registered (`Script.source`: the header binding KEYS and
 * ARGV and the composed body), mutated mechanically by `luaMutants()` (lua.ts), and each mutant becomes a
 * `CatalogueEntry` whose mutation makes the `Script` constructor (src/redis/script.ts) take the mutated
 * text instead of that one script's source, run by the same runner and scratch copies as the hand-written
 * catalogue, on the tests of the primitive's folder (`testsOf`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Script } from '../../src/redis/script.js';
import { KINDS, type CatalogueEntry } from './catalogue.js';
import { draw } from '../mutation-score/sample.js';
import { luaMutants, type LuaMutant } from './lua.js';
import { repoRoot } from './scratch.js';

/** A script's role, by the last part of its name: the scripts the pass mutates. */
const ROLES: Readonly<Record<string, 'acquire' | 'release' | 'renew'>> = {
  acquire: 'acquire',
  campaign: 'acquire',
  trySetCount: 'acquire',
  unlock: 'release',
  leave: 'release',
  release: 'release',
  add: 'release',
  releaseIfExists: 'release',
  countDown: 'release',
  shorten: 'release',
  renew: 'renew',
};

/** One generated mutant as a catalogue entry, with where it is. */
export interface LuaEntry extends CatalogueEntry {
  /** The script's name, such as `lock.acquire`. */
  readonly script: string;
  readonly folder: string;
  readonly line: number;
  readonly operator: string;
  /** The original line of the script that the mutant changes (trimmed). */
  readonly text: string;
}

/** The constructor line of `Script` that every generated mutation replaces (it must occur once). */
const SHA_LINE = "    this.sha = createHash('sha1').update(source).digest('hex');";

/**
 * The mutation of src/redis/script.ts that gives the script `name` the source `source` (the SHA, EVAL,
 * and the Functions library all follow `this.source`).
 */
function swap(name: string, source: string): Pick<CatalogueEntry, 'file' | 'find' | 'replace'> {
  return {
    file: 'src/redis/script.ts',
    find: SHA_LINE,
    replace: `    if (name === ${JSON.stringify(name)}) (this as unknown as { source: string }).source = ${JSON.stringify(source)};\n    this.sha = createHash('sha1').update(this.source).digest('hex');`,
  };
}

/** Every jest test file under `dir` (repository-relative), recursively. */
function testFiles(dir: string): string[] {
  return readdirSync(join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/**
 * The jest tests of a primitive's folder: `test/<folder>/`, its model test `test/model/<folder>-model.test.ts`
 * when there is one, every other test file that imports from `src/<folder>/` itself (such as
 * test/lock/lost-grant.test.ts for the fair and fenced locks' acquire scripts), and, when the folder's kind
 * is a lock variant of test/contract/variants.ts, every test file that runs all variants by importing it
 * (test/lock/unlock-guard.test.ts); and for every folder the one-kind-per-name matrix
 * (test/contract/kinds.test.ts), which calls every kind's scripts on a name another kind holds.
 */
export function testsOf(folder: string): string[] {
  const imports = new RegExp(`from '(\\.\\./)+src/${folder}/`);
  const model = `test/model/${folder}-model.test.ts`;
  const variant = readFileSync(join(repoRoot, 'test/contract/variants.ts'), 'utf8').includes(`kind: '${folder}'`);
  const covers = (text: string): boolean => imports.test(text) || (variant && /from '(\.\.\/)*(contract\/|\.\/)variants\.js'/.test(text));
  const others = testFiles('test').filter((file) => !file.startsWith(`test/${folder}/`) && (file === model || covers(readFileSync(join(repoRoot, file), 'utf8'))));
  return [`test/${folder}/`, ...[...others, KINDS].sort()];
}

/** Every script the pass mutates, with its folder, in folder then export order. */
export async function luaScripts(): Promise<Array<{ folder: string; script: Script }>> {
  const found: Array<{ folder: string; script: Script }> = [];
  const names = new Set<string>();
  for (const folder of readdirSync(join(repoRoot, 'src')).sort()) {
    const file = join(repoRoot, 'src', folder, 'scripts.ts');
    if (!existsSync(file)) continue;
    const exports = (await import(file)) as Record<string, unknown>;
    for (const value of Object.values(exports)) {
      if (!(value instanceof Script) || !ROLES[value.name.split('.').pop() ?? '']) continue;
      if (names.has(value.name)) throw new Error(`two scripts are named ${value.name}: a generated mutant could not tell them apart`);
      names.add(value.name);
      if (!existsSync(join(repoRoot, 'test', folder))) throw new Error(`src/${folder}/ has scripts but no test/${folder}/ folder to run on its mutants`);
      found.push({ folder, script: value });
    }
  }
  return found;
}

/** Every generated mutant, as catalogue entries with ids `<script>#<n>` (n counts from 1 per script). */
export async function luaCatalogue(): Promise<LuaEntry[]> {
  const entries: LuaEntry[] = [];
  for (const { folder, script } of await luaScripts()) {
    const lines = script.source.split('\n');
    luaMutants(script.source).forEach((mutant: LuaMutant, i) => {
      entries.push({
        id: `${script.name}#${i + 1}`,
        mechanism: `${script.name} line ${mutant.line}: ${mutant.operator}`,
        script: script.name,
        folder,
        line: mutant.line,
        operator: mutant.operator,
        text: lines[mutant.line - 1].trim(),
        tests: testsOf(folder),
        ...swap(script.name, mutant.source),
      });
    });
  }
  return entries;
}

/**
 * `n` of `entries` drawn with `npm run mutation-score`'s seeded draw (a smaller sample is a prefix of a
 * larger one with the same seed), run in catalogue order.
 */
export function sample<T>(entries: readonly T[], n: number, seed: string): T[] {
  const drawn = new Set(draw(entries, n, seed));
  return entries.filter((entry) => drawn.has(entry));
}
