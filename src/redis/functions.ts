import { createHash } from 'node:crypto';
import { PermissionError } from '../errors.js';
import type { Connection } from './connection.js';
import { deniedBy, replyKindOf } from './replies.js';

/** What the library needs of a `Script` (script.ts): its name, Lua source, SHA1 and whether it only reads. */
export interface LibraryScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
  readonly readOnly?: boolean;
}

/**
 * relock's scripts as one Redis Functions library (Redis 7+), for `scripting: 'functions'`: every script
 * built (`register`) becomes a function of the library `relock_<hash>`, where the hash covers every
 * script's name and source, so each version of relock has its own library and function names (function
 * names are global on a server: two versions can be loaded side by side). A script's body runs unchanged,
 * its `KEYS` and `ARGV` being the function's parameters; read-only scripts are flagged `no-writes` and
 * called with `FCALL_RO`.
 *
 * The library is loaded lazily, per node: a call answered "Function not found" (a server that never saw
 * it, restarted without persistence, or a primary promoted from a replica that had not received it; on a
 * Cluster, each primary on its first call) loads it with `FUNCTION LOAD` on the node of the call's first
 * key and runs again. A library loaded meanwhile by another client ("already exists") counts as loaded.
 */
export interface FunctionsLibrary {
  /** The library name, `relock_<hash>`. */
  readonly name: string;
  /** The library code, for `FUNCTION LOAD`. */
  readonly code: string;
}

interface Built extends FunctionsLibrary {
  readonly functions: Map<LibraryScript, string>;
}

const scripts: LibraryScript[] = [];
let built: Built | undefined;

/** Adds `script` to the library (the library is rebuilt, under a new name, on its next use). */
export function register(script: LibraryScript): void {
  scripts.push(script);
  built = undefined;
}

/**
 * relock's Redis Functions library, as `scripting: 'functions'` loads it: its `name` (`relock_<hash>`)
 * and `code` (for `FUNCTION LOAD`). For operators who load it themselves and do not grant the
 * application `function|load` (docs/security.md). Sends nothing.
 */
export function functionsLibrary(): FunctionsLibrary {
  const { name, code } = build();
  return { name, code };
}

function build(): Built {
  if (built) return built;
  const ordered = [...scripts].sort((a, b) => (a.name + a.sha < b.name + b.sha ? -1 : 1));
  const hash = createHash('sha1').update(ordered.map((s) => `${s.name}:${s.sha}`).join('\n')).digest('hex').slice(0, 16);
  const name = `relock_${hash}`;
  const functions = new Map<LibraryScript, string>();
  const taken = new Set<string>();
  const parts = [`#!lua name=${name}`];
  ordered.forEach((script, i) => {
    let fn = `${name}_${script.name.replace(/\W/g, '_')}`;
    if (taken.has(fn)) fn += `_${i}`;
    taken.add(fn);
    functions.set(script, fn);
    parts.push(
      `local function f${i}(KEYS, ARGV)\n${script.source}\nend`,
      `redis.register_function{function_name='${fn}', callback=f${i}, flags={${script.readOnly ? "'no-writes'" : ''}}}`,
    );
  });
  built = { name, code: parts.join('\n'), functions };
  return built;
}

/**
 * Runs `script` as a function (`FCALL`, or `FCALL_RO` for a read-only one) routed by `firstKey`, loading
 * the library first when the node does not have it. `command` is laid out as `[verb, function, numkeys,
 * ...keys, ...args]` (the first two are filled in here). Replies are raw. Throws `PermissionError` when
 * the ACL refuses the call or the load, and Redis's error for anything else.
 */
export async function callFunction(connection: Connection, script: LibraryScript, firstKey: string | undefined, command: string[]): Promise<unknown> {
  const library = build();
  const verb = script.readOnly ? 'FCALL_RO' : 'FCALL';
  command[0] = verb;
  command[1] = library.functions.get(script)!;
  try {
    return await connection.send(firstKey, command);
  } catch (error) {
    if (!(error instanceof Error) || replyKindOf(error) !== 'function-missing') throw refusal(error, script.name, verb);
  }
  await connection.sendKeyless(firstKey ?? '', ['FUNCTION', 'LOAD', library.code]).catch((error: unknown) => {
    if (!(error instanceof Error) || replyKindOf(error) !== 'library-exists') throw refusal(error, script.name, 'function|load');
  });
  return connection.send(firstKey, command).catch((error: unknown) => {
    throw refusal(error, script.name, verb);
  });
}

/** `error` as a `PermissionError` when it is an ACL refusal of `sent`, else as it is. */
export function refusal(error: unknown, operation: string, sent: string): unknown {
  const denied = deniedBy(error, sent.toLowerCase());
  return denied ? new PermissionError(operation, denied.command, denied.permission, { cause: error }) : error;
}
