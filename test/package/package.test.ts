/**
 * The built package as its users get it: `npm pack`ed, unpacked into a scratch consumer under `.tmp/`
 * (inside the repository, so that `redis`, `p-retry` and `pino` resolve from its node_modules), then
 * imported as an ES module and required as CommonJS in child Node processes that take and release locks
 * on a real Redis, and type-checked as a TypeScript consumer under `moduleResolution` node16 and bundler.
 * `dist` is rebuilt first when it is missing or older than the sources.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as sources from '../../src/index.js';
import type { LockHandle } from '../../src/index.js';
import { BUILD_TIMEOUT_MS, ensureBuilt, root } from '../support/build.js';
import { closeAll, connect, lockClient, uniqueName, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const consumerFiles = join(here, 'consumer');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

let server: RedisServer;
let redis: Redis;
let scratch: string;
let busy: LockHandle;
const busyName = uniqueName('package-busy');

beforeAll(async () => {
  server = await startRedis();
  redis = await connect(server.url);
  await ensureBuilt();
  scratch = join(root, '.tmp', `package-test-${process.pid}-${Date.now()}`);
  const installed = join(scratch, 'node_modules', 'relock');
  mkdirSync(installed, { recursive: true });
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: root, timeout: 120_000, maxBuffer: 16 << 20 });
  const [packed] = JSON.parse(stdout) as Array<{ filename: string }>;
  await run('tar', ['-xzf', join(scratch, packed!.filename), '-C', installed, '--strip-components=1']);
  writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'relock-consumer', private: true, type: 'module' }));
  for (const file of readdirSync(consumerFiles)) copyFileSync(join(consumerFiles, file), join(scratch, file));
  busy = await lockClient(redis).getLock(busyName).acquire();
}, BUILD_TIMEOUT_MS + 60_000);

afterAll(async () => {
  await busy?.release();
  await closeAll();
  await redis?.close();
  await server?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Runs a consumer entry point in its own Node process and parses the JSON line it prints. */
async function consume(entry: string, name: string): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [join(scratch, entry), JSON.stringify({ url: server.url, name, busyName })], {
    cwd: scratch,
    timeout: 60_000,
    env: { ...process.env, NODE_OPTIONS: '--unhandled-rejections=strict' },
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

/** What both entry points must see: the same behaviour as the sources, on the same Redis as the test. */
function expectLockScenario(result: Record<string, unknown>): void {
  expect(result).toMatchObject({
    acquired: true,
    reentered: true,
    holdCount: 2,
    otherOwner: false,
    lockedAfterUnlock: false,
    secondUnlock: { name: 'IllegalMonitorStateError', code: 'ILLEGAL_MONITOR_STATE', typed: true },
    busy: { name: 'LockAcquireTimeoutError', typed: true, waitTimeMs: 50 },
    inside: { aborted: false, locked: true },
    lockedAfterWithLock: false,
  });
  expect(result.ttl).toBeGreaterThan(4000);
  expect(result.ttl).toBeLessThanOrEqual(5000);
}

/** Type-checks the consumer with the project's tsc; resolves to the files tsc read. */
async function typecheck(config: string, compilerOptions: Record<string, unknown>, files: string[]): Promise<string[]> {
  writeFileSync(
    join(scratch, config),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', lib: ['ES2023', 'ESNext.Disposable'], strict: true, noEmit: true, types: ['node'], ...compilerOptions },
      files,
    }),
  );
  try {
    const { stdout } = await run(process.execPath, [tsc, '-p', join(scratch, config), '--listFiles'], { cwd: scratch, timeout: 180_000, maxBuffer: 64 << 20 });
    return stdout.split('\n').map((line) => line.trim()).filter(Boolean);
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`tsc -p ${config} failed:\n${[stdout, stderr].filter(Boolean).join('\n').split('\n').filter((l) => !l.startsWith('/')).join('\n')}`);
  }
}

const installedFile = (path: string): string => join(scratch, 'node_modules', 'relock', path);

describe('the built package', () => {
  it('imports as an ES module (dist/esm) and takes and releases locks on a real Redis', async () => {
    const result = await consume('esm.mjs', uniqueName('package-esm'));
    expect(fileURLToPath(result.resolved as string)).toBe(installedFile('dist/esm/index.js'));
    expect(result.exports).toEqual(Object.keys(sources).sort());
    expectLockScenario(result);
  }, 90_000);

  it('requires as CommonJS (dist/cjs) with the same exports and behaviour', async () => {
    const result = await consume('cjs.cjs', uniqueName('package-cjs'));
    expect(result.resolved).toBe(installedFile('dist/cjs/index.js'));
    expect(result.version).toBe((createRequire(import.meta.url)('../../package.json') as { version: string }).version);
    expect(result.exports).toEqual(Object.keys(sources).sort());
    expectLockScenario(result);
  }, 90_000);

  it('runs the relock command with npx through its bin entry', async () => {
    // What npm install does with `bin`: a link in node_modules/.bin.
    const { bin } = JSON.parse(readFileSync(installedFile('package.json'), 'utf8')) as { bin: { relock: string } };
    mkdirSync(join(scratch, 'node_modules', '.bin'), { recursive: true });
    symlinkSync(join('..', 'relock', bin.relock), join(scratch, 'node_modules', '.bin', 'relock'));
    const { stdout } = await run('npx', ['--no', '--', 'relock', 'inspect', busyName, '--json', '--url', server.url], { cwd: scratch, timeout: 60_000 });
    expect(JSON.parse(stdout)).toMatchObject({ name: busyName, type: 'lock', holders: [{ owner: busy.owner, holds: 1 }] });
  }, 90_000);

  it('type-checks a consumer under moduleResolution node16, ESM and CommonJS files against their own declarations', async () => {
    const files = await typecheck('tsconfig.node16.json', { module: 'Node16', moduleResolution: 'Node16' }, ['types-esm.ts', 'types-cjs.cts']);
    expect(files).toContain(installedFile('dist/esm/index.d.ts'));
    expect(files).toContain(installedFile('dist/cjs/index.d.ts'));
  }, 200_000);

  it('type-checks a consumer under moduleResolution bundler', async () => {
    const files = await typecheck('tsconfig.bundler.json', { module: 'ESNext', moduleResolution: 'Bundler' }, ['types-esm.ts']);
    expect(files).toContain(installedFile('dist/esm/index.d.ts'));
    expect(files).not.toContain(installedFile('dist/cjs/index.d.ts'));
  }, 200_000);
});
