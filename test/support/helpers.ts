/**
 * Shared test helpers: node-redis connections, lock clients, deadline-bounded polling, Redis counters,
 * and child processes that use relock from their own Node process.
 */
import { AsyncResource } from 'node:async_hooks';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createClient } from 'redis';
import { createLockClient, runInContext, type LockClient, type LockClientOptions } from '../../src/index.js';

export type Redis = ReturnType<typeof createClient>;

/** A connected node-redis client with an error listener (errors are expected when tests kill servers). */
export async function connect(url: string, options: Parameters<typeof createClient>[0] = {}): Promise<Redis> {
  const client = createClient({ url, ...options });
  client.on('error', () => {});
  await client.connect();
  return client as Redis;
}

/** A unique object name for one test, so tests never see each other's keys. */
export function uniqueName(prefix = 'test'): string {
  return `${prefix}:${randomBytes(6).toString('hex')}`;
}

/** A lock client on `redis` (any client relock accepts) with test-friendly defaults, closed by `closeAll()`. */
export function lockClient(redis: object, options: Omit<LockClientOptions, 'redis' | 'url'> = {}): LockClient {
  const client = createLockClient({ redis, ...options });
  opened.push(client);
  return client;
}
const opened: LockClient[] = [];

/**
 * A runner bound to one new lock context (a Redisson thread): every `fn` it runs, in any order, acts as
 * the same owner. For tests that interleave the steps of several owners.
 */
export function contextRunner(): <T>(fn: () => T) => T {
  const scope = runInContext(() => new AsyncResource('relock-test-owner'));
  return (fn) => scope.runInAsyncScope(fn);
}

/** Shuts down every lock client made by `lockClient()`. */
export async function closeAll(): Promise<void> {
  await Promise.all(opened.splice(0).map((c) => c.shutdown()));
}

/** Polls `check` every `intervalMs` until it returns a truthy value or `timeoutMs` passes (then throws). */
export async function waitUntil<T>(check: () => T | Promise<T>, timeoutMs = 5000, intervalMs = 10, what = 'condition'): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `promise`'s value, or `fallback` once `ms` passed first: a deadline that keeps a defect from hanging a
 * test. Its timer is cleared when `promise` settles, so none outlives the test (`Promise.race` with
 * `sleep(ms)` kept the jest worker alive up to `ms` after its last file: "A worker process has failed to
 * exit gracefully").
 */
export function atMost<T, F = undefined>(promise: Promise<T>, ms: number, fallback?: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(fallback as F), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Calls of one command so far (`INFO commandstats`), e.g. `commandCalls(redis, 'evalsha')`. */
export async function commandCalls(redis: Redis, command: string): Promise<number> {
  const info = await redis.info('commandstats');
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info);
  return match ? Number(match[1]) : 0;
}

/**
 * Resolves once Redis has run `command` `count` times since `base` (a `commandCalls` reading), polled every
 * 2 ms with a deadline. For "the waiters have parked": a waiter that started with its channel unsubscribed
 * makes exactly two attempts before it sleeps, its first and the one after subscribing (one EVALSHA each),
 * so `2 × waiters` calls mean every waiter is parked; a fixed sleep only guesses it, and a loaded machine
 * can leave attempts to come after it. Resolves to the count then (the base of an absence window after it).
 */
export function callsSince(redis: Redis, command: string, base: number, count: number, timeoutMs = 5000): Promise<number> {
  return waitUntil(
    async () => {
      const calls = await commandCalls(redis, command);
      return calls - base >= count ? calls : 0;
    },
    timeoutMs,
    2,
    `${count} ${command} call(s)`,
  );
}

/** Number of subscribers of `channel` (`PUBSUB NUMSUB`). */
export async function numsub(redis: Redis, channel: string): Promise<number> {
  const reply = (await redis.sendCommand(['PUBSUB', 'NUMSUB', channel])) as unknown;
  if (Array.isArray(reply)) return Number(reply[1]);
  return Number((reply as Record<string, unknown>)[channel] ?? 0);
}

/** Waits until `channel` has exactly `count` subscribers (`PUBSUB NUMSUB`), polling every 2 ms. */
export function subscribers(redis: Redis, channel: string, count = 1, timeoutMs = 5000): Promise<unknown> {
  return waitUntil(async () => (await numsub(redis, channel)) === count, timeoutMs, 2, `${count} subscriber(s) of ${channel}`);
}

/** Redis server time in milliseconds (`TIME`): the clock relock uses for every stored expiry. */
export async function serverTime(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** Runs a full garbage collection (`gc()` of a context created after `--expose-gc` was set at run time). */
export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/**
 * Starts `count` waits with `wait(signal)`, 100 at a time, each aborted on the next turn of the event
 * loop, after a warm-up of a tenth of them; waits until `client` has left every channel and the timers
 * are back to what they were. Resolves to the smaller of the heap's growths in bytes over the two halves
 * of the waits, each measured after a full collection (what stays reachable, not garbage not yet
 * collected): a leak shows in both.
 */
export async function abandonWaits(client: LockClient, count: number, wait: (signal: AbortSignal) => Promise<unknown>): Promise<number> {
  const timers = activeTimers();
  const round = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, async () => {
          const controller = new AbortController();
          const waiting = wait(controller.signal);
          setImmediate(() => controller.abort(new Error('stop')));
          await waiting.catch(() => {});
        }),
      );
    }
  };
  // Warm-up, then two equal halves: a leak grows the heap by about the same in each half, while a one-off
  // (a buffer that grew to a new high-water mark, the test runner's own caches) shows in one of them only.
  const half = Math.round((count - count / 10) / 2);
  const settledHeap = async (): Promise<number> => {
    await waitUntil(() => client.stats().subscriptions === 0, 2000, 5, 'all channels left');
    await waitUntil(() => activeTimers() <= timers, 1000, 10, 'timers to be cleared');
    // Let the client's periodic housekeeping run (its in-flight sweep and latch flush every 50 ms):
    // right after a burst, settled calls waiting for the next sweep still hold their promise chains.
    await sleep(250);
    collectGarbage();
    return process.memoryUsage().heapUsed;
  };
  await round(count / 10);
  const h0 = await settledHeap();
  await round(half);
  const h1 = await settledHeap();
  await round(half);
  const h2 = await settledHeap();
  return Math.min(h1 - h0, h2 - h1);
}

/** Active resources of this process of each of `kinds` (`'Timeout'`, `'TCPSocketWrap'`, …), for "nothing left open" checks. */
export function activeResources<K extends string>(...kinds: K[]): Record<K, number> {
  const counts = Object.fromEntries(kinds.map((kind) => [kind, 0])) as Record<K, number>;
  for (const resource of process.getActiveResourcesInfo()) if (resource in counts) counts[resource as K]++;
  return counts;
}

/** Active timers of this process (for "no leftover timers" checks). */
export function activeTimers(): number {
  return activeResources('Timeout').Timeout;
}

/** Keys matching `pattern` (SCAN). */
export async function keys(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  for await (const batch of redis.scanIterator({ MATCH: pattern, COUNT: 1000 })) found.push(...(Array.isArray(batch) ? batch : [batch]));
  return found;
}

const here = dirname(fileURLToPath(import.meta.url));

/**
 * A Node process (`node <argv>`) that prints JSON lines, read as they come; `nextWhere(match)` resolves
 * with the next line that matches. Lines that are not JSON are kept as text (`output`).
 */
export class JsonLinesProcess {
  readonly process: ChildProcessWithoutNullStreams;
  private readonly lines: Array<Record<string, unknown>> = [];
  private readonly waiters: Array<() => void> = [];
  /** Everything the process wrote to stderr so far. */
  stderr = '';
  /** Every stdout line so far, parsed or not. */
  readonly output: string[] = [];
  readonly exited: Promise<number | null>;

  constructor(argv: readonly string[], env: NodeJS.ProcessEnv = process.env) {
    this.process = spawn(process.execPath, [...argv], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...env, NODE_OPTIONS: '--unhandled-rejections=strict' },
    });
    let buffer = '';
    this.process.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        this.output.push(line);
        try {
          this.lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          continue;
        }
        for (const wake of this.waiters.splice(0)) wake();
      }
    });
    this.process.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => this.process.once('exit', (code) => {
      for (const wake of this.waiters.splice(0)) wake();
      resolve(code);
    }));
  }

  /**
   * The next line that `match`es (consumed), waiting up to `timeoutMs` (generous by default: starting a
   * tsx process takes seconds on a loaded 2-core machine).
   */
  async nextWhere(match: (line: Record<string, unknown>) => boolean, what: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const i = this.lines.findIndex(match);
      if (i >= 0) return this.lines.splice(i, 1)[0]!;
      if (this.process.exitCode !== null || this.process.signalCode !== null) throw new Error(`process exited before ${what}: ${this.stderr}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`process sent no ${what} within ${timeoutMs} ms: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.process.kill(signal);
  }

  /** Kills the process if it is still running and waits for it to exit. */
  async stop(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
    await this.exited;
  }
}

/**
 * A Node process running `test/support/workers/<script>.ts` (through tsx) with `args` (and `env`, the
 * parent's by default). It prints JSON lines; `next(type)` resolves with the next line whose `type` matches.
 */
export class Worker extends JsonLinesProcess {
  constructor(script: string, args: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env) {
    super(['--import', 'tsx', join(here, 'workers', `${script}.ts`), JSON.stringify(args)], env);
  }

  /** The next message of `type` (consumed), waiting up to `timeoutMs`. */
  next(type: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
    return this.nextWhere((line) => line.type === type, `"${type}"`, timeoutMs);
  }

  /** Sends a JSON command line to the worker's stdin. */
  send(message: Record<string, unknown>): void {
    this.process.stdin.write(`${JSON.stringify(message)}\n`);
  }
}
