/**
 * The command line of `relock` (src/cli/args.ts, on `util.parseArgs`): help in commander's layout, usage
 * errors with exit code 2, options by their camel-cased names with defaults and `REDIS_URL`. Runs the
 * parser and `run()` in this process: no Redis, no child process.
 */
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { parseCommandLine } from '../../src/cli/args.js';
import { program, run } from '../../src/cli/program.js';

/** Runs `relock <args>` in this process; resolves to its exit code and what it printed. */
async function relock(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true));
  jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  const tty = process.stdout.isTTY;
  process.stdout.isTTY = false; // help wraps at 80 columns, not at the width of the terminal running jest
  const code = await run(['node', 'relock', ...args]);
  process.stdout.isTTY = tty;
  jest.restoreAllMocks();
  return { code, stdout, stderr };
}

const parse = (...args: string[]) => parseCommandLine(program(), args);

afterEach(() => {
  jest.restoreAllMocks();
  delete process.env.REDIS_URL;
});

describe('relock command line', () => {
  it('prints the help of the program and of each command, wrapped at 80 columns, with defaults, environment and choices', async () => {
    const main = await relock('--help');
    expect(main).toMatchObject({ code: 0, stderr: '' });
    expect(main.stdout).toContain('Usage: relock [options] [command]\n');
    expect(main.stdout).toContain('  force-unlock [options] <name>  delete a held lock whoever holds it, and wake\n                                 its waiters\n');
    expect(main.stdout).toContain('  help [command]                 display help for command\n');
    expect(main.stdout).toMatch(/Exit codes: 0 done, .* 3 no such relock object\.\nEvery command takes --json/);
    expect((await relock('help')).stdout).toBe(main.stdout);

    const inspect = await relock('inspect', '--help');
    expect(inspect).toMatchObject({ code: 0, stderr: '' });
    expect(inspect.stdout).toBe((await relock('help', 'inspect')).stdout);
    expect(inspect.stdout.split('\n').slice(0, 7)).toEqual([
      'Usage: relock inspect [options] <name>',
      '',
      'show the state of a lock, semaphore or latch',
      '',
      'Arguments:',
      '  name               the object name (as given to getLock, getSemaphore…,',
      '                     without --prefix)',
    ]);
    expect(inspect.stdout).toContain('  --url <url>        Redis URL (default: "redis://localhost:6379", env:\n                     REDIS_URL)\n');
    expect(inspect.stdout).toContain('(choices: "lock",\n');
    expect(inspect.stdout).toContain('  -h, --help         display help for command\n');
    expect((await relock('list', '-h')).stdout).toContain('  pattern            a Redis glob over object names (default: "*")\n');
    expect(await relock('--version')).toMatchObject({ code: 0, stdout: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    // -V is the short form (the help lists `-V, --version`), not an unknown option.
    expect(await relock('-V')).toEqual(await relock('--version'));
    // No command: the help, on stderr, as bad usage.
    expect(await relock()).toMatchObject({ code: 2, stdout: '', stderr: main.stdout });
  });

  it('reports bad usage on stderr as "error: …" with a pointer to --help, and exit code 2', async () => {
    const cases: Array<[string[], string]> = [
      [['inspect'], "missing required argument 'name'"],
      [['inspect', 'a', 'b'], "too many arguments for 'inspect'. Expected 1 argument but got 2."],
      [['inspect', 'x', '--bogus'], "unknown option '--bogus'"],
      [['inspect', 'x', '-z'], "unknown option '-z'"],
      [['inspect', 'x', '--jsn'], "unknown option '--jsn'\n(Did you mean --json?)"],
      [['insp'], "unknown command 'insp'\n(Did you mean inspect?)"],
      [['-x'], "unknown option '-x'"],
      [['inspect', 'x', '--url'], "option '--url <url>' argument missing"],
      [['inspect', 'x', '--json=1'], "option '--json' takes no value"],
      [['inspect', 'x', '--limit', 'lots'], 'option \'--limit <n>\' argument \'lots\' is invalid. expected a whole number >= 1, got "lots"'],
      // Number() reads these as 5000, 16 and 5: digits only, as the message says.
      [['inspect', 'x', '--limit', '5e3'], 'option \'--limit <n>\' argument \'5e3\' is invalid. expected a whole number >= 1, got "5e3"'],
      [['inspect', 'x', '--limit', '0x10'], 'option \'--limit <n>\' argument \'0x10\' is invalid.'],
      [['inspect', 'x', '--limit', '5.0'], 'option \'--limit <n>\' argument \'5.0\' is invalid.'],
      [['watch', 'x', '--count', '0'], "option '--count <n>' argument '0' is invalid."],
      [['inspect', 'x', '--type', 'foo'], "option '--type <type>' argument 'foo' is invalid. Allowed choices are lock, spin-lock, non-reentrant-lock, fenced-lock,"],
      [['list', '--type', 'lock,foo'], "option '--type <types>' argument 'lock,foo' is invalid. unknown type foo"],
    ];
    for (const [args, message] of cases) {
      const result = await relock(...args);
      expect({ args, ...result }).toEqual({ args, code: 2, stdout: '', stderr: expect.stringContaining(`error: ${message}`) });
      expect(result.stderr).toMatch(/\n\(run relock <command> --help for its options\)\n$/);
    }
  });

  it('parses options by their camel-cased names, anywhere on the line, with defaults and REDIS_URL', () => {
    expect(parse('list', '--scan-count', '50', 'order:*', '--type', 'lock,latch', '--json')).toMatchObject({
      argument: 'order:*',
      options: { scanCount: 50, type: ['lock', 'count-down-latch'], json: true, url: 'redis://localhost:6379', prefix: '' },
    });
    expect(parse('list')).toMatchObject({ argument: '*', options: { scanCount: 1000 } });
    process.env.REDIS_URL = 'redis://from-env:6380';
    expect(parse('force-unlock', 'a', '-y')).toMatchObject({ argument: 'a', options: { yes: true, url: 'redis://from-env:6380' } });
    expect(parse('watch', 'a', '--url=redis://given:1', '--prefix', '')).toMatchObject({ options: { url: 'redis://given:1', prefix: '', interval: 250 } });
    expect(parse('inspect', '--', '-dash-name')).toMatchObject({ argument: '-dash-name' });
  });
});
