import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt, root } from '../../../test/support/build.js';

type Relock = typeof import('../../../src/index.js');

let loaded: Promise<Relock> | undefined;

/**
 * The relock module the benchmark measures: the built package (`dist/esm/index.js`, what users run, with
 * tsc's output rather than tsx's), built first by `ensureBuilt()` (test/support/build.ts: `npm run build`
 * under its build lock when an output is missing or older than the sources). `RELOCK_BENCH_SOURCE=1`
 * measures the TypeScript sources under tsx instead. The benchmark's main process loads it before it
 * starts any child, so children find `dist/` up to date.
 */
export function relockLibrary(): Promise<Relock> {
  loaded ??= (async () => {
    if (process.env.RELOCK_BENCH_SOURCE === '1') return import('../../../src/index.js');
    await ensureBuilt();
    return (await import(pathToFileURL(join(root, 'dist', 'esm', 'index.js')).href)) as Relock;
  })();
  return loaded;
}
