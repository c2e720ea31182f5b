#!/usr/bin/env node
/**
 * The `relock` command (package `bin`): `inspect`, `list`, `force-unlock` and `watch` relock objects in
 * Redis. See docs/cli.md. Not part of the library's API.
 */
import { run } from './program.js';

void run(process.argv).then((code) => {
  process.exitCode = code;
});
