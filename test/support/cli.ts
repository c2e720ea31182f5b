/**
 * The `relock` command as a child process: from the sources through tsx (`runCli`, `startCli`), or any
 * other entry point (`dist`, the packed package). `REDIS_URL` is removed from the child's environment
 * unless a test sets it, so that every run names its Redis explicitly.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { root } from './build.js';
import { useRedis } from './harness.js';
import { JsonLinesProcess, type Redis } from './helpers.js';
import type { RedisServer } from './redis.js';

/** `node` arguments that run the CLI from its TypeScript sources. */
export const SOURCE_ENTRY = ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts')];

export interface CliResult {
  /** The exit code (`null` when killed by a signal). */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  /** `node` arguments before the command's own (default: the sources through tsx). */
  entry?: readonly string[];
  /** Extra environment variables. */
  env?: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed. */
  input?: string;
  /** Working directory. */
  cwd?: string;
  /** Kill the process after this long (default 60 s: tsx start-up is slow on a loaded machine). */
  timeoutMs?: number;
}

function environment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '--unhandled-rejections=strict', ...extra };
  if (extra.REDIS_URL === undefined) delete env.REDIS_URL;
  return env;
}

/** Runs `relock <args>` to completion. */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return runProcess(process.execPath, [...(options.entry ?? SOURCE_ENTRY), ...args], options);
}

/** Runs `command args` with the CLI's environment; resolves with its exit code and output. */
export function runProcess(command: string, args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { cwd: options.cwd ?? root, env: environment(options.env), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/**
 * Runs `relock <args>` under a pseudo-terminal (util-linux `script`): stdin, stdout and stderr are a
 * terminal, and what the process wrote to either comes back as `stdout` (with `\r\n` line ends).
 */
export function runCliInTerminal(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  const quote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, ...(options.entry ?? SOURCE_ENTRY), ...args].map(quote).join(' ');
  return runProcess('script', ['-qec', command, '/dev/null'], options);
}

/** Parses the JSON document a run printed, with its output in the error when it is not JSON. */
export function json<T = Record<string, unknown>>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${result.code}):\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
}

/** Starts `relock <args>` (say `watch … --json`) and reads its JSON lines as they come. */
export function startCli(args: readonly string[], options: Pick<CliOptions, 'entry' | 'env'> = {}): JsonLinesProcess {
  return new JsonLinesProcess([...(options.entry ?? SOURCE_ENTRY), ...args], environment(options.env));
}

export interface CliHarness {
  /** The test file's Redis (valid once `beforeAll` ran). */
  readonly server: RedisServer;
  /** A node-redis client on it. */
  readonly redis: Redis;
  /** `startCli(args)`, stopped after the test. */
  start(args: readonly string[]): JsonLinesProcess;
}

/** Registers the hooks of a CLI test file: a Redis, and clean-up of lock clients and CLI processes after each test. */
export function useCliHarness(): CliHarness {
  const harness = useRedis<JsonLinesProcess>();
  return {
    get server() {
      return harness.server;
    },
    get redis() {
      return harness.redis;
    },
    start(args) {
      const process = startCli(args);
      harness.workers.push(process);
      return process;
    },
  };
}
