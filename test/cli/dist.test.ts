/**
 * The `relock` command as built into `dist` (`npm run build`, rebuilt first when older than the sources):
 * run with node and as an executable (its shebang), against a real Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILD_TIMEOUT_MS, ensureBuilt, root } from '../support/build.js';
import { json, runCli, runProcess } from '../support/cli.js';
import { closeAll, connect, lockClient, uniqueName, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';

let server: RedisServer;
let redis: Redis;
const main = join(root, 'dist', 'esm', 'cli', 'main.js');

beforeAll(async () => {
  server = await startRedis();
  redis = await connect(server.url);
  await ensureBuilt();
}, BUILD_TIMEOUT_MS + 30_000);

afterAll(async () => {
  await closeAll();
  await redis?.close();
  await server?.stop();
});

describe('the built relock command', () => {
  it('inspects a held lock with node dist/esm/cli/main.js', async () => {
    const lock = lockClient(redis).getLock(uniqueName('dist-lock'));
    const handle = await lock.acquire({ leaseMs: 20_000 });
    const result = await runCli(['inspect', lock.name, '--json', '--url', server.url], { entry: [main] });
    expect(result.code).toBe(0);
    const d = json(result);
    expect(d).toMatchObject({ type: 'lock', holders: [{ owner: handle.owner, holds: 1 }] });
    expect(d.ttlMs).toBeLessThanOrEqual(20_000);
    await handle.release();
  });

  it('runs as an executable and reports the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    const result = await runProcess(main, ['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n` });
    const help = await runProcess(main, ['--help']);
    expect(help.code).toBe(0);
    for (const command of ['inspect', 'list', 'force-unlock', 'watch']) expect(help.stdout).toContain(command);
  });

  it('without node-redis (no `redis`, or a `redis` without its `@redis/client`) says what to install, exit 1', async () => {
    // A copy of the package whose node_modules has every dependency but node-redis: the command resolves
    // `redis`, then `@redis/client` from where `redis` is (src/cli/connect.ts).
    const project = mkdtempSync(join(tmpdir(), 'relock-no-redis-'));
    try {
      const pkg = join(project, 'relock');
      mkdirSync(join(pkg, 'node_modules'), { recursive: true });
      cpSync(join(root, 'dist'), join(pkg, 'dist'), { recursive: true });
      cpSync(join(root, 'package.json'), join(pkg, 'package.json'));
      for (const entry of readdirSync(join(root, 'node_modules'))) {
        if (entry !== 'redis' && entry !== '@redis' && entry !== '.bin') symlinkSync(join(root, 'node_modules', entry), join(pkg, 'node_modules', entry));
      }
      const copy = join(pkg, 'dist', 'esm', 'cli', 'main.js');
      const missing = async (): Promise<void> => {
        const result = await runProcess(process.execPath, [copy, 'inspect', 'anything', '--url', server.url], { cwd: project });
        expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 1, stderr: expect.stringContaining('node-redis, which is not installed here: run `npm install redis`') });
      };
      await missing(); // no `redis`: ERR_MODULE_NOT_FOUND
      mkdirSync(join(pkg, 'node_modules', 'redis'));
      writeFileSync(join(pkg, 'node_modules', 'redis', 'package.json'), JSON.stringify({ name: 'redis', version: '0.0.0', main: 'index.js' }));
      writeFileSync(join(pkg, 'node_modules', 'redis', 'index.js'), 'module.exports = {};\n');
      await missing(); // `redis` without `@redis/client`: MODULE_NOT_FOUND
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });
});
