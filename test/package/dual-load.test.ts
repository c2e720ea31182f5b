/**
 * One module state when a process loads both builds (issue 29): an ES module app whose CommonJS
 * dependency also uses relock gets dist/esm and dist/cjs as two module instances. A child Node process
 * (test/package/dual/both-builds.mjs, on the built package) loads both: a context opened by either
 * build's client is the context of the other build's locks (so a second acquisition is a reentry), and
 * `instanceof` recognises an error of either build with the other build's classes.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BUILD_TIMEOUT_MS, ensureBuilt, root } from '../support/build.js';
import { startRedis, type RedisServer } from '../support/redis.js';

const run = promisify(execFile);
let server: RedisServer;

beforeAll(async () => {
  server = await startRedis();
  await ensureBuilt();
}, BUILD_TIMEOUT_MS + 30_000);

afterAll(async () => {
  await server?.stop();
});

it('both builds in one process share the lock contexts, and instanceof works across them both ways', async () => {
  const { stdout } = await run(process.execPath, [join(root, 'test', 'package', 'dual', 'both-builds.mjs')], {
    env: { ...process.env, REDIS_URL: server.url, NODE_OPTIONS: '' },
    timeout: 60_000,
  });
  const findings = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  expect(findings).toEqual({
    twoBuilds: true,
    cjsLockInEsmContext: { again: true, holds: 2, held: true },
    esmLockInCjsContext: { again: true, holds: 2, held: true },
    errors: {
      esmName: 'OwnerUnknownError',
      cjsName: 'OwnerUnknownError',
      cjsErrorIsEsmClass: true,
      cjsErrorIsEsmBase: true,
      esmErrorIsCjsClass: true,
      esmErrorIsCjsBase: true,
      cjsErrorIsEsmOtherClass: false,
      esmErrorIsCjsOtherClass: false,
      plainErrorIsRelockError: false,
      stillErrors: true,
    },
  });
}, 90_000);
