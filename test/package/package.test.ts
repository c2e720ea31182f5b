/**
 * The package as its users get it. `npm pack` runs in a clean copy of the repository (the files git tracks
 * or would track: no dist/, no .tmp/, no node_modules/ of its own), so it is the `prepack` script that
 * must build dist; the copy borrows the repository's node_modules through a symlink for that build, which
 * saves the `npm ci` a clone would need. The tarball is then unpacked into a scratch project outside the
 * repository whose node_modules hold only what an install of `relock redis` brings: relock's own runtime
 * dependencies and redis, with their dependencies (read from package-lock.json and linked from the
 * repository's node_modules), and the `relock` bin link. A devDependency that the package imports, or a
 * file that `files` leaves out, fails here. In it the package is imported as an ES module and required as
 * CommonJS in child Node processes that take and release locks on a real Redis, the command runs through
 * `npx relock`, and a TypeScript consumer is type-checked under `moduleResolution` node16 and bundler.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import semver from 'semver';
import * as fencingSources from '../../src/fencing/index.js';
import * as sources from '../../src/index.js';
import type { LockHandle } from '../../src/index.js';
import { BUILD_TIMEOUT_MS, root } from '../support/build.js';
import { closeAll, connect, lockClient, uniqueName, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const consumerFiles = join(here, 'consumer');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

let server: RedisServer;
let redis: Redis;
let work: string;
let scratch: string;
let packedFiles: string[];
let ioredisOnly: string;
let ioredis6: string;
let busy: LockHandle;
const busyName = uniqueName('package-busy');

/** The environment of npm runs in the copy: without the npm_* variables of the `npm test` running jest. */
const cleanEnv = (): NodeJS.ProcessEnv => Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));

/** Copies what a clone would hold (tracked files and untracked ones not ignored, as in the working tree) to `dir`. */
async function cleanCopy(dir: string): Promise<void> {
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, maxBuffer: 16 << 20 });
  for (const file of stdout.split('\0').filter(Boolean)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    try {
      copyFileSync(join(root, file), join(dir, file));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error; // deleted in the working tree
    }
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
}

/**
 * The top-level packages of the repository's node_modules that an install of `names` brings, per
 * package-lock.json: each with its dependencies, optional and non-optional peer dependencies, resolved
 * as Node does (nested node_modules first).
 */
function installClosure(names: readonly string[]): string[] {
  type Entry = { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string>; peerDependencies?: Record<string, string>; peerDependenciesMeta?: Record<string, { optional?: boolean }> };
  const { packages } = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, Entry> };
  const topLevel = new Set<string>();
  const seen = new Set<string>();
  const visit = (name: string, from: string): void => {
    let path: string | undefined;
    for (let dir = from; path === undefined; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/node_modules/')))) {
      if (packages[`${dir ? `${dir}/` : ''}node_modules/${name}`]) path = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      else if (dir === '') return; // not installed (an optional dependency of another platform)
    }
    if (seen.has(path)) return;
    seen.add(path);
    if (!path.slice('node_modules/'.length).includes('/node_modules/')) topLevel.add(name);
    const entry = packages[path]!;
    const peers = Object.keys(entry.peerDependencies ?? {}).filter((peer) => !entry.peerDependenciesMeta?.[peer]?.optional);
    for (const dep of [...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {}), ...peers]) visit(dep, path);
  };
  for (const name of names) visit(name, '');
  return [...topLevel].sort();
}

/**
 * A scratch project `dir` (in `work`) with the tarball unpacked as node_modules/relock and, beside it, what
 * an install of relock and `names` brings (linked from the repository's node_modules).
 */
async function project(tarball: string, dir: string, names: readonly string[]): Promise<string> {
  const path = join(work, dir);
  mkdirSync(join(path, 'node_modules', 'relock'), { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', join(path, 'node_modules', 'relock'), '--strip-components=1']);
  const { dependencies = {} } = JSON.parse(readFileSync(join(path, 'node_modules', 'relock', 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  for (const name of installClosure([...Object.keys(dependencies), ...names])) {
    mkdirSync(dirname(join(path, 'node_modules', name)), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), join(path, 'node_modules', name));
  }
  writeFileSync(join(path, 'package.json'), JSON.stringify({ name: `relock-${dir}`, private: true, type: 'module' }));
  return path;
}

/** The framework integrations (`relock/<name>`), each with what its scratch project installs besides relock. */
const FRAMEWORKS = {
  express: ['redis', 'express', '@types/express'],
  fastify: ['ioredis', 'fastify', 'fastify-plugin'],
  nestjs: ['redis', '@nestjs/common', '@nestjs/core', '@nestjs/platform-express', 'reflect-metadata', 'rxjs'],
} as const;
const frameworkProjects: Record<string, string> = {};
/** What the `relock/fencing` project installs besides relock: the drivers (optional peers) and pg's types. */
const FENCING_DRIVERS = ['pg', '@types/pg', 'mysql2'] as const;
let fencingProject: string;

beforeAll(async () => {
  server = await startRedis();
  redis = await connect(server.url);
  work = realpathSync(mkdtempSync(join(tmpdir(), 'relock-package-')));
  const clean = join(work, 'clone');
  await cleanCopy(clean);
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: clean, env: cleanEnv(), timeout: BUILD_TIMEOUT_MS, maxBuffer: 16 << 20 });
  const [packed] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  packedFiles = packed!.files.map((f) => f.path);

  scratch = join(work, 'consumer');
  const modules = join(scratch, 'node_modules');
  mkdirSync(join(modules, 'relock'), { recursive: true });
  await run('tar', ['-xzf', join(work, packed!.filename), '-C', join(modules, 'relock'), '--strip-components=1']);
  const manifest = JSON.parse(readFileSync(join(modules, 'relock', 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; bin: Record<string, string> };
  // What `npm install relock redis` puts beside relock (the README's install line), and the bin link.
  for (const name of installClosure([...Object.keys(manifest.dependencies ?? {}), 'redis'])) {
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), join(modules, name));
  }
  mkdirSync(join(modules, '.bin'));
  symlinkSync(join('..', 'relock', manifest.bin.relock!), join(modules, '.bin', 'relock'));
  writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'relock-consumer', private: true, type: 'module' }));
  for (const file of readdirSync(consumerFiles)) copyFileSync(join(consumerFiles, file), join(scratch, file));

  // A second project with relock and ioredis only: `npm install relock ioredis`, no `redis` anywhere.
  ioredisOnly = join(work, 'ioredis-only');
  mkdirSync(join(ioredisOnly, 'node_modules', 'relock'), { recursive: true });
  await run('tar', ['-xzf', join(work, packed!.filename), '-C', join(ioredisOnly, 'node_modules', 'relock'), '--strip-components=1']);
  for (const name of installClosure([...Object.keys(manifest.dependencies ?? {}), 'ioredis'])) {
    mkdirSync(dirname(join(ioredisOnly, 'node_modules', name)), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), join(ioredisOnly, 'node_modules', name));
  }
  writeFileSync(join(ioredisOnly, 'package.json'), JSON.stringify({ name: 'relock-ioredis-consumer', private: true, type: 'module' }));
  copyFileSync(join(here, 'ioredis-only', 'flash-sale.mjs'), join(ioredisOnly, 'flash-sale.mjs'));

  // A third with the newest major of ioredis (6, the devDependency `ioredis-v6` installed as `ioredis`).
  ioredis6 = join(work, 'ioredis-6');
  mkdirSync(join(ioredis6, 'node_modules', 'relock'), { recursive: true });
  await run('tar', ['-xzf', join(work, packed!.filename), '-C', join(ioredis6, 'node_modules', 'relock'), '--strip-components=1']);
  for (const name of installClosure([...Object.keys(manifest.dependencies ?? {}), 'ioredis-v6'])) {
    mkdirSync(dirname(join(ioredis6, 'node_modules', name)), { recursive: true });
    symlinkSync(join(root, 'node_modules', name), join(ioredis6, 'node_modules', name === 'ioredis-v6' ? 'ioredis' : name));
  }
  writeFileSync(join(ioredis6, 'package.json'), JSON.stringify({ name: 'relock-ioredis6-consumer', private: true, type: 'module' }));
  copyFileSync(join(here, 'ioredis-only', 'flash-sale.mjs'), join(ioredis6, 'flash-sale.mjs'));
  for (const [framework, names] of Object.entries(FRAMEWORKS)) {
    const path = await project(join(work, packed!.filename), framework, names);
    for (const file of readdirSync(join(here, 'frameworks'))) copyFileSync(join(here, 'frameworks', file), join(path, file));
    frameworkProjects[framework] = path;
  }
  fencingProject = await project(join(work, packed!.filename), 'fencing', FENCING_DRIVERS);
  for (const file of readdirSync(join(here, 'fencing'))) copyFileSync(join(here, 'fencing', file), join(fencingProject, file));
  busy = await lockClient(redis).getLock(busyName).acquire();
}, BUILD_TIMEOUT_MS + 60_000);

afterAll(async () => {
  await busy?.release();
  await closeAll();
  await redis?.close();
  await server?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
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
    // An unlock outside any context by a task that took nothing: refused as OwnerUnknownError, an IllegalMonitorStateError.
    secondUnlock: { name: 'OwnerUnknownError', code: 'OWNER_UNKNOWN', typed: true },
    busy: { name: 'LockAcquireTimeoutError', typed: true, waitTimeMs: 50 },
    inside: { aborted: false, locked: true },
    lockedAfterWithLock: false,
  });
  expect(result.ttl).toBeGreaterThan(4000);
  expect(result.ttl).toBeLessThanOrEqual(5000);
}

/** Type-checks the consumer with the project's tsc; resolves to the files tsc read. */
async function typecheck(config: string, compilerOptions: Record<string, unknown>, files: string[], dir = scratch): Promise<string[]> {
  writeFileSync(
    join(dir, config),
    JSON.stringify({
      // @types/node from the repository: the scratch project installs only what relock's users need at run time.
      compilerOptions: { target: 'ES2022', lib: ['ES2023', 'ESNext.Disposable'], strict: true, noEmit: true, types: ['node'], typeRoots: [join(root, 'node_modules', '@types')], ...compilerOptions },
      files,
    }),
  );
  try {
    const { stdout } = await run(process.execPath, [tsc, '-p', join(dir, config), '--listFiles'], { cwd: dir, timeout: 180_000, maxBuffer: 64 << 20 });
    return stdout.split('\n').map((line) => line.trim()).filter(Boolean);
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`tsc -p ${config} failed:\n${[stdout, stderr].filter(Boolean).join('\n').split('\n').filter((l) => !l.startsWith('/')).join('\n')}`);
  }
}

const installedFile = (path: string): string => join(scratch, 'node_modules', 'relock', path);

describe('the built package', () => {
  it('is built by prepack: a pack of a clean copy holds dist (ESM, CommonJS, the command) and no tests', () => {
    for (const file of ['dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/package.json', 'dist/esm/cli/main.js', 'README.md']) {
      expect(packedFiles).toContain(file);
    }
    expect(packedFiles.filter((file) => /^(test|scripts|\.tmp|node_modules|docs\/api)\//.test(file))).toEqual([]);
  });

  it('ships the guides the README links to (docs/*.md), so that its links and `relock --help` lead to files that are installed', () => {
    const readme = readFileSync(installedFile('README.md'), 'utf8');
    const linked = [...readme.matchAll(/\]\((docs\/[^)#]+\.(?:md|svg))/g)].map((m) => m[1]!);
    expect(linked.length).toBeGreaterThan(10);
    for (const file of linked) expect(existsSync(installedFile(file))).toBe(true);
  });

  it('imports as an ES module (dist/esm) and takes and releases locks on a real Redis, without the optional peer @opentelemetry/api', async () => {
    expect(existsSync(join(scratch, 'node_modules', '@opentelemetry', 'api'))).toBe(false);
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

  it('works in a project with ioredis and no `redis` installed: a flash sale on the project\'s ioredis client, and `url` opened with ioredis', async () => {
    expect(readdirSync(join(ioredisOnly, 'node_modules'))).not.toContain('redis');
    const { stdout } = await run(process.execPath, [join(ioredisOnly, 'flash-sale.mjs'), JSON.stringify({ url: server.url, name: uniqueName('package-sale') })], {
      cwd: ioredisOnly,
      timeout: 60_000,
      env: { ...process.env, NODE_OPTIONS: '--unhandled-rejections=strict' },
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ redisInstalled: false, sold: 10, stockLeft: 0, oversold: false, ioredisOpen: true, viaUrl: true });
  }, 90_000);

  it('works with the newest major of each peer dependency: in its peer range, and ioredis 6 runs the flash sale', async () => {
    const { peerDependencies } = JSON.parse(readFileSync(installedFile('package.json'), 'utf8')) as { peerDependencies: Record<string, string> };
    // The newest major of each peer on npm when this was written (`npm view <peer> version`); node-redis 5
    // and ioredis 5 stay in range too.
    const newest: Record<string, string> = {
      ioredis: '6.1.0', redis: '6.4.0', iovalkey: '0.4.0', '@valkey/valkey-glide': '2.5.2', '@opentelemetry/api': '1.10.0', pg: '8.23.1', mysql2: '3.26.1',
      express: '5.3.0', fastify: '5.12.8', 'fastify-plugin': '6.0.1', '@nestjs/common': '12.6.3', '@nestjs/core': '12.6.3', 'reflect-metadata': '0.2.2', rxjs: '7.8.2',
    };
    expect(Object.keys(peerDependencies).sort()).toEqual(Object.keys(newest).sort());
    for (const [peer, version] of Object.entries(newest)) expect([peer, semver.satisfies(version, peerDependencies[peer]!)]).toEqual([peer, true]);
    for (const older of ['5.4.0', '5.11.1']) expect(semver.satisfies(older, peerDependencies.ioredis!)).toBe(true);
    expect(semver.satisfies('5.12.1', peerDependencies.redis!)).toBe(true);
    const installed = JSON.parse(readFileSync(join(ioredis6, 'node_modules', 'ioredis', 'package.json'), 'utf8')) as { version: string };
    expect(semver.major(installed.version)).toBe(6);
    const { stdout } = await run(process.execPath, [join(ioredis6, 'flash-sale.mjs'), JSON.stringify({ url: server.url, name: uniqueName('package-sale6') })], {
      cwd: ioredis6,
      timeout: 60_000,
      env: { ...process.env, NODE_OPTIONS: '--unhandled-rejections=strict' },
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ redisInstalled: false, sold: 10, stockLeft: 0, oversold: false, ioredisOpen: true, viaUrl: true });
  }, 90_000);

  it('says what to install when the relock command runs where node-redis is not installed', async () => {
    const result = await run(process.execPath, [join(ioredisOnly, 'node_modules', 'relock', 'dist', 'esm', 'cli', 'main.js'), 'inspect', 'x', '--url', server.url], { cwd: ioredisOnly, timeout: 60_000 }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('run `npm install redis`');
  }, 90_000);

  it('runs the relock command with npx through its bin entry: --help, and inspect on a real Redis', async () => {
    const help = await run('npx', ['--no', '--', 'relock', '--help'], { cwd: scratch, env: cleanEnv(), timeout: 60_000 });
    expect(help.stdout).toMatch(/^Usage: relock \[options\] \[command\]\n/);
    for (const command of ['inspect', 'list', 'force-unlock', 'watch', 'top']) expect(help.stdout).toContain(`  ${command} [options]`);
    expect(help.stdout).toContain(`The guide: ${installedFile('docs/cli.md')}\n`);
    const { stdout } = await run('npx', ['--no', '--', 'relock', 'inspect', busyName, '--json', '--url', server.url], { cwd: scratch, env: cleanEnv(), timeout: 60_000 });
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

  it('loads relock without any framework installed: the integrations are optional peers, and the core entry imports none', () => {
    for (const name of ['express', 'fastify', 'fastify-plugin', '@nestjs']) expect(existsSync(join(scratch, 'node_modules', name))).toBe(false);
    const core = readFileSync(installedFile('dist/esm/index.js'), 'utf8') + readFileSync(installedFile('dist/cjs/index.js'), 'utf8');
    // What the entry loads (its comments name the framework guides it renders as pages).
    expect(core).not.toMatch(/(?:from\s*|import\s*\(\s*|require\s*\(\s*)['"][^'"]*(?:express|fastify|nestjs)/);
    expect(core).toMatch(/require\("\.\/client\.js"\)/); // the pattern sees requires at all
    for (const framework of Object.keys(FRAMEWORKS)) expect(existsSync(installedFile(`${framework}/package.json`))).toBe(true); // for node10 resolvers
  });

  it.each(Object.keys(FRAMEWORKS))('relock/%s works from the tarball in a project with only that framework and one Redis client: a real app answers a fenced route', async (framework) => {
    const dir = frameworkProjects[framework]!;
    const { stdout } = await run(process.execPath, [join(dir, 'app.mjs'), JSON.stringify({ url: server.url, framework, name: uniqueName(`package-${framework}`) })], {
      cwd: dir,
      timeout: 60_000,
      env: { ...process.env, NODE_OPTIONS: '--unhandled-rejections=strict' },
    });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { answer: { status: number; body: { token: string } }; resolved: string; required: string[] };
    expect(result.answer.status).toBeLessThan(300);
    expect(result.answer.body.token).toMatch(/^[1-9]\d*$/);
    expect(fileURLToPath(result.resolved)).toBe(join(dir, 'node_modules', 'relock', 'dist', 'esm', framework, 'index.js'));
    expect(result.required.length).toBeGreaterThan(1);
  }, 90_000);

  it.each(Object.keys(FRAMEWORKS))('relock/%s type-checks for its users under moduleResolution node16 and bundler', async (framework) => {
    const dir = frameworkProjects[framework]!;
    const options = framework === 'nestjs' ? { experimentalDecorators: true } : {};
    const node16 = await typecheck('tsconfig.node16.json', { module: 'Node16', moduleResolution: 'Node16', ...options }, [`types-${framework}.ts`], dir);
    expect(node16).toContain(join(dir, 'node_modules', 'relock', 'dist', 'esm', framework, 'index.d.ts'));
    const bundler = await typecheck('tsconfig.bundler.json', { module: 'ESNext', moduleResolution: 'Bundler', ...options }, [`types-${framework}.ts`], dir);
    expect(bundler).toContain(join(dir, 'node_modules', 'relock', 'dist', 'esm', framework, 'index.d.ts'));
  }, 200_000);

  it('relock/fencing resolves from the tarball, as an ES module (dist/esm) and as CommonJS (dist/cjs), with the same exports and no driver loaded', async () => {
    const { stdout } = await run(process.execPath, [join(fencingProject, 'resolve.mjs')], { cwd: fencingProject, timeout: 60_000 });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { esm: { resolved: string; exports: string[] }; cjs: { resolved: string; exports: string[] }; stale: unknown };
    const installed = join(fencingProject, 'node_modules', 'relock');
    expect(fileURLToPath(result.esm.resolved)).toBe(join(installed, 'dist', 'esm', 'fencing', 'index.js'));
    expect(result.cjs.resolved).toBe(join(installed, 'dist', 'cjs', 'fencing', 'index.js'));
    const exported = Object.keys(fencingSources).sort();
    expect(result.esm.exports).toEqual(exported);
    expect(result.cjs.exports).toEqual(exported);
    expect(result.stale).toEqual({ name: 'StaleTokenError', code: 'STALE_TOKEN' });
    expect(existsSync(join(installed, 'fencing', 'package.json'))).toBe(true); // for node10 resolvers
  }, 90_000);

  it('relock/fencing type-checks for its users (their pg and mysql2 pools) under moduleResolution node16 (ESM and CommonJS) and bundler', async () => {
    const dir = fencingProject;
    const declarations = (build: 'esm' | 'cjs'): string => join(dir, 'node_modules', 'relock', 'dist', build, 'fencing', 'index.d.ts');
    const node16 = await typecheck('tsconfig.node16.json', { module: 'Node16', moduleResolution: 'Node16' }, ['types-fencing.ts', 'types-fencing-cjs.cts'], dir);
    expect(node16).toContain(declarations('esm'));
    expect(node16).toContain(declarations('cjs'));
    const bundler = await typecheck('tsconfig.bundler.json', { module: 'ESNext', moduleResolution: 'Bundler' }, ['types-fencing.ts'], dir);
    expect(bundler).toContain(declarations('esm'));
    expect(bundler).not.toContain(declarations('cjs'));
  }, 200_000);
});
