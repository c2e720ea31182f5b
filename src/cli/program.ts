import { Command, CommanderError } from 'commander';
import { createRequire } from 'node:module';
import { registerForceUnlock } from './commands/force-unlock.js';
import { registerInspect } from './commands/inspect.js';
import { registerList } from './commands/list.js';
import { registerWatch } from './commands/watch.js';
import { messageOf } from './connect.js';
import { CliError, EXIT } from './errors.js';

/** The version of the installed package (read through the package's self-reference). */
function version(): string {
  return (createRequire(import.meta.url)('relock/package.json') as { version: string }).version;
}

/** The `relock` program with its four commands. Commander's own errors throw instead of exiting. */
export function buildProgram(): Command {
  const program = new Command('relock')
    .description('Inspect and operate relock locks, semaphores and latches in Redis')
    .version(version())
    .showHelpAfterError('(run relock <command> --help for its options)')
    .addHelpText('after', '\nExit codes: 0 done, 1 failed (Redis unreachable, a Redis error, not confirmed), 2 bad usage, 3 no such relock object.\nEvery command takes --json, --url (or REDIS_URL), --cluster and --prefix. See docs/cli.md.')
    .exitOverride();
  for (const register of [registerInspect, registerList, registerForceUnlock, registerWatch]) register(program);
  for (const command of program.commands) command.exitOverride();
  return program;
}

/**
 * Runs the program on `argv` (`process.argv` form) and resolves to the exit code: that of the command,
 * 0 after `--help`/`--version`, 2 for a usage error commander found (it printed it), else the code of
 * the `CliError`, whose message is printed as `relock: …` on stderr.
 */
export async function run(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    const exitCode = error instanceof CliError ? error.exitCode : EXIT.failed;
    process.stderr.write(`relock: ${messageOf(error)}\n`);
    return exitCode;
  }
}
