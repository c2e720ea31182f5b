import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

type Relock = typeof import('../../../src/index.js');

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const ENTRY = join(ROOT, 'dist', 'esm', 'index.js');

/** The newest modification time (ms) of a file under `dir`, 0 when there is none. */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return latest;
}

/** Whether dist/esm/index.js is missing or older than a file of src/. */
function stale(): boolean {
  try {
    return statSync(ENTRY).mtimeMs < newest(join(ROOT, 'src'));
  } catch {
    return true;
  }
}

let loaded: Promise<Relock> | undefined;

/**
 * The relock module the benchmark measures: the built package (`dist/esm/index.js`, what users run, with
 * tsc's output rather than tsx's), built first with `npm run build` when it is missing or older than a
 * file of src/. `RELOCK_BENCH_SOURCE=1` measures the TypeScript sources under tsx instead. The benchmark's
 * main process loads it before it starts any child, so children never build.
 */
export function relockLibrary(): Promise<Relock> {
  loaded ??= (async () => {
    if (process.env.RELOCK_BENCH_SOURCE === '1') return import('../../../src/index.js');
    if (stale()) {
      process.stderr.write('bench: dist/ is missing or older than src/: npm run build\n');
      execFileSync(process.execPath, [join(ROOT, 'scripts', 'build', 'build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] });
    }
    return (await import(pathToFileURL(ENTRY).href)) as Relock;
  })();
  return loaded;
}
