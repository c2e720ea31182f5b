/**
 * `@opentelemetry/api` is an optional peer dependency: without it relock loads nothing of it and works;
 * with `otel: false` it is never asked for. A child process whose module resolution refuses the package
 * (test/observe/without-otel) stands for a service that did not install it.
 */
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { Observer } from '../../src/observe/observer.js';
import { useRedis } from '../support/harness.js';

const env = useRedis();
const here = join(dirname(fileURLToPath(import.meta.url)), 'without-otel');

/** Runs the app without `@opentelemetry/api`; resolves to its JSON lines. */
async function runWithoutOtel(otel: 'default' | 'false'): Promise<Record<string, unknown>[]> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--import', join(here, 'hide.mjs'), join(here, 'app.ts'), env.server.url, otel], { timeout: 60_000 });
  return stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('without @opentelemetry/api', () => {
  it('a service that did not install it takes and releases locks; relock tried to load it once and records nothing', async () => {
    const lines = await runWithoutOtel('default');
    expect(lines).toEqual([{ type: 'requested', specifier: '@opentelemetry/api' }, { type: 'done', recording: false, held: true }]);
  });

  it('with otel: false the package is never asked for', async () => {
    expect(await runWithoutOtel('false')).toEqual([{ type: 'done', recording: false, held: true }]);
  });

  it('the observer runs operations unchanged and calls no loader when told otel: false', async () => {
    let loads = 0;
    const off = new Observer(false, pino({ level: 'silent' }), () => {
      loads++;
      return Promise.reject(new Error('not installed'));
    });
    await off.ready;
    const notFound = Object.assign(new Error("Cannot find package '@opentelemetry/api'"), { code: 'ERR_MODULE_NOT_FOUND' });
    const logged: Array<Record<string, unknown>> = [];
    const debugLog = pino({ level: 'debug' }, { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) });
    const missing = new Observer({}, debugLog, () => Promise.reject(notFound));
    await missing.ready;
    // Why it records nothing is logged at debug level, with the loader's error.
    expect(logged).toEqual([expect.objectContaining({ level: 20, msg: '@opentelemetry/api not loaded: no metrics or spans', err: expect.objectContaining({ message: notFound.message, code: 'ERR_MODULE_NOT_FOUND' }) })]);
    expect([loads, off.recording, missing.recording]).toEqual([0, false, false]);
    expect(await missing.acquire('lock', 'n', 'n', 'o', 0, undefined, async () => 'granted')).toBe('granted');
    await expect(missing.release('lock', 'n', 'n', 'o', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });
});
