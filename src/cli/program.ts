import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parseCommandLine, UsageError, type ProgramSpec } from './args.js';
import { forceUnlockCommand } from './commands/force-unlock.js';
import { inspectCommand } from './commands/inspect.js';
import { leadersCommand } from './commands/leaders.js';
import { listCommand } from './commands/list.js';
import { topCommand } from './commands/top.js';
import { watchCommand } from './commands/watch.js';
import { messageOf } from './connect.js';
import { CliError, EXIT } from './errors.js';

/** The installed package's package.json (found through the package's self-reference). */
const manifest = (): string => createRequire(import.meta.url).resolve('relock/package.json');

/** The version of the installed package. */
function version(): string {
  return (createRequire(import.meta.url)(manifest()) as { version: string }).version;
}

/** The command's guide as installed with the package (`files` ships docs/): `…/node_modules/relock/docs/cli.md`. */
export function guidePath(): string {
  return join(dirname(manifest()), 'docs', 'cli.md');
}

/** The `relock` program with its six commands. */
export function program(): ProgramSpec {
  return {
    name: 'relock',
    description: 'Inspect and operate relock locks, semaphores and latches in Redis',
    version: version(),
    commands: [inspectCommand, listCommand, leadersCommand, forceUnlockCommand, watchCommand, topCommand],
    helpAfter:
      'Exit codes: 0 done, 1 failed (Redis unreachable, a Redis error, not confirmed), 2 bad usage, 3 no such relock object.\n' +
      `Every command takes --json, --url (or REDIS_URL), --cluster and --prefix. The guide: ${guidePath()}`,
  };
}

/**
 * Runs the program on `argv` (`process.argv` form) and resolves to the exit code: that of the command,
 * 0 after `--help`/`--version`, 2 for bad usage (`error: …` and a hint on stderr), else the code of the
 * `CliError`, whose message is printed as `relock: …` on stderr.
 */
export async function run(argv: readonly string[]): Promise<number> {
  try {
    const parsed = parseCommandLine(program(), argv.slice(2));
    if ('print' in parsed) {
      (parsed.exitCode === EXIT.ok ? process.stdout : process.stderr).write(parsed.print);
      return parsed.exitCode;
    }
    return await parsed.command.run(parsed.argument, parsed.options as never);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n(run relock <command> --help for its options)\n`);
      return EXIT.usage;
    }
    const exitCode = error instanceof CliError ? error.exitCode : EXIT.failed;
    process.stderr.write(`relock: ${messageOf(error)}\n`);
    return exitCode;
  }
}
