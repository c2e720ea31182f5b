#!/usr/bin/env node
/**
 * The `relock` command (package `bin`): `inspect`, `list`, `force-unlock` and `watch` relock objects in
 * Redis. See docs/cli.md. Not part of the library's API.
 */
import { run } from './program.js';

// `relock list | head`: a reader that went away ends the output, not the process with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(process.exitCode ?? 0);
});

void run(process.argv).then((code) => {
  process.exitCode = code;
});
