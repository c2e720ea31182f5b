/**
 * The built package for tests that run `dist`: `ensureBuilt()` runs `npm run build` when an output is
 * missing or older than the sources, under a lock directory so that test files running at the same time
 * never build over each other (the build deletes `dist` first).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sleep } from './helpers.js';

const run = promisify(execFile);
/** The repository root. */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Building takes about 20 s on a quiet 2-core machine; allow for a loaded one. */
export const BUILD_TIMEOUT_MS = 300_000;
const OUTPUTS = ['dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/package.json', 'dist/esm/cli/main.js'];
const LOCK = join(root, '.tmp', 'build.lock');

/** Builds `dist` unless it is up to date; resolves once it is. */
export async function ensureBuilt(): Promise<void> {
  await acquireLock();
  try {
    if (distIsStale()) await run('npm', ['run', 'build'], { cwd: root, timeout: BUILD_TIMEOUT_MS, maxBuffer: 16 << 20 });
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/** Takes the build lock (a directory holding the owner's pid); breaks it when that process is gone. */
async function acquireLock(): Promise<void> {
  const deadline = performance.now() + BUILD_TIMEOUT_MS;
  mkdirSync(dirname(LOCK), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      return;
    } catch {
      if (!ownerAlive()) rmSync(LOCK, { recursive: true, force: true });
      if (performance.now() > deadline) throw new Error(`the build lock ${LOCK} was held for ${BUILD_TIMEOUT_MS} ms`);
      await sleep(200);
    }
  }
}

function ownerAlive(): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
  } catch {
    return true; // being created: its owner has not written its pid yet
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** True when a build output is missing or older than a source, a build script or the tsconfig. */
function distIsStale(): boolean {
  const outputs = OUTPUTS.map((f) => join(root, f));
  if (!outputs.every((f) => existsSync(f))) return true;
  const built = Math.min(...outputs.map((f) => statSync(f).mtimeMs));
  return newestMtime([join(root, 'src'), join(root, 'scripts', 'build'), join(root, 'tsconfig.json')]) > built;
}

function newestMtime(paths: string[]): number {
  let newest = 0;
  for (const path of paths) {
    const stat = statSync(path);
    newest = Math.max(newest, stat.mtimeMs);
    if (stat.isDirectory()) newest = Math.max(newest, newestMtime(readdirSync(path).map((entry) => join(path, entry))));
  }
  return newest;
}
