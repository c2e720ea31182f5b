#!/usr/bin/env node
/**
 * The `relock` command (package `bin`): `inspect`, `list`, `force-unlock` and `watch` relock objects in
 * Redis. See docs/cli.md. Not part of the library's API.
 */
import module from 'node:module';

// Node 22.1+ keeps the code it compiles in a cache on disk (os.tmpdir()), so that a later run of the
// command starts faster; Node 20 has no such cache. Enabled before the rest of the command is imported.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

// `relock list | head`: a reader that went away ends the output, not the process with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(process.exitCode ?? 0);
});

void import('./program.js')
  .then(({ run }) => run(process.argv))
  .then((code) => {
    process.exitCode = code;
  });
