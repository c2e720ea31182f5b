/**
 * Real Redis for tests. Three ways to get one, tried in this order:
 *  1. `REDIS_URL` is set: use that server (tests that kill, pause or restart a server are skipped by
 *     `startRedis({ controllable: true })` callers through `handle.controllable`).
 *  2. A `redis-server` binary (`$REDIS_SERVER_BIN`, default `redis-server` on PATH; a `valkey-server`
 *     works the same): start one on a free port with `--save '' --appendonly no`, and stop it after the
 *     test file. Every helper follows it: Cluster nodes, Sentinel (`<server> --sentinel`) and the
 *     `redis-cli` used to form a Cluster (`REDIS_CLI_BIN`, see `CLI_BIN`). docs/topologies.md says how to
 *     run the suite against a server build.
 *  3. A container engine answers within 3 s: start `redis:7.4-alpine` with testcontainers.
 * Otherwise it fails with a message that says how to get Redis.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

export interface RedisServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** True when this harness started the server and can kill, pause and restart it. */
  readonly controllable: boolean;
  /** SIGKILL the server and wait for it to exit. */
  kill(): Promise<void>;
  /** SIGSTOP: the server keeps its sockets but answers nothing. */
  pause(): void;
  /** SIGCONT after `pause()`. */
  resume(): void;
  /** Start the server again on the same port (after `kill()` or `stop()`), with an empty data set. */
  restart(): Promise<void>;
  /** Stop the server (SIGTERM, or the container's stop) and wait for it to exit. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Extra `redis-server` arguments, e.g. `['--notify-keyspace-events', 'Ex']`. */
  args?: string[];
  /** Ignore `REDIS_URL` and start a server this harness controls (binary or container). */
  controllable?: boolean;
  /** Port to listen on; a free one when omitted. */
  port?: number;
  /**
   * Serve TLS only on the port (`--port 0 --tls-port`), with these PEM files; the URL is then
   * `rediss://`. Clients need no certificate of their own (`--tls-auth-clients no`). Needs the binary.
   */
  tls?: { cert: string; key: string; ca: string };
}

/** The server binary every helper starts (standalone nodes, Cluster nodes, Sentinel): `$REDIS_SERVER_BIN` or `redis-server` on PATH. */
export const SERVER_BIN = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const BIN = SERVER_BIN;

/**
 * The command-line client of the same build: `$REDIS_CLI_BIN`; else, when `REDIS_SERVER_BIN` is a path,
 * the `redis-cli` or `valkey-cli` beside it (the one named like the server first); else `redis-cli` on PATH.
 */
export const CLI_BIN = process.env.REDIS_CLI_BIN ?? siblingCli(process.env.REDIS_SERVER_BIN);

function siblingCli(server: string | undefined): string {
  if (server === undefined || !server.includes('/')) return 'redis-cli';
  const dir = dirname(server);
  const names = basename(server).startsWith('valkey') ? ['valkey-cli', 'redis-cli'] : ['redis-cli', 'valkey-cli'];
  const found = names.map((name) => join(dir, name)).find((path) => existsSync(path));
  return found ?? 'redis-cli';
}

export function redisBinaryAvailable(): boolean {
  const r = spawnSync(BIN, ['--version'], { stdio: 'ignore' });
  return r.status === 0;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * The lowest port of the kernel's ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range;
 * 32768 elsewhere, the common default): ports from there up are handed to outgoing connections.
 */
function ephemeralFloor(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 1024 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A free port P whose cluster bus port P + 10000 is free too, both below the ephemeral range when it
 * leaves room (20000 up to the range's floor − 10000: 20000–22767 on Linux's default): a port checked
 * free inside that range can be taken by any outgoing connection before redis-server binds it ("Address
 * already in use", seen once in a clean-clone run on 2026-12-06).
 */
export async function freeClusterPort(): Promise<number> {
  const span = ephemeralFloor() - 10_000 - 20_000;
  const width = span >= 1_000 ? span : 25_000;
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * width);
    if ((await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
}

/** Start (or connect to) a Redis for one test file. Call `stop()` in `afterAll`. */
export async function startRedis(options: StartOptions = {}): Promise<RedisServer> {
  if (process.env.REDIS_URL && !options.controllable && !options.tls) return external(process.env.REDIS_URL);
  if (redisBinaryAvailable()) return startProcess(options);
  if (options.tls) throw new Error(`a TLS Redis needs a redis-server binary built with TLS (${BIN} --version failed)`);
  const container = await startContainer().catch((cause: unknown) => {
    throw new Error(
      'No Redis for the tests: set REDIS_URL=redis://host:port, put a redis-server binary on PATH ' +
        '(Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis), or start a container engine (Docker/Podman) for testcontainers.',
      { cause },
    );
  });
  return container;
}

function external(url: string): RedisServer {
  const parsed = new URL(url);
  const unsupported = async (): Promise<never> => {
    throw new Error('this Redis comes from REDIS_URL; the harness cannot control it');
  };
  return {
    url,
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    controllable: false,
    kill: unsupported,
    pause: () => void unsupported(),
    resume: () => void unsupported(),
    restart: unsupported,
    stop: async () => {},
  };
}

async function startProcess(options: StartOptions): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'relock-redis-'));
  let child: ChildProcess | undefined;

  const launch = async (): Promise<void> => {
    const tls = options.tls;
    const listen = tls
      ? ['--port', '0', '--tls-port', String(port), '--tls-cert-file', tls.cert, '--tls-key-file', tls.key, '--tls-ca-cert-file', tls.ca, '--tls-auth-clients', 'no']
      : ['--port', String(port)];
    const args = [
      ...listen, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--dir', dir, '--enable-debug-command', 'local', '--protected-mode', 'no', '--logfile', '',
      ...(options.args ?? []),
    ];
    const proc = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => fail(new Error(`redis-server on port ${port} not ready after 10 s:\n${output}`)), 10_000);
      const onData = (chunk: Buffer): void => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          cleanup();
          resolve();
        }
      };
      const onExit = (code: number | null): void => fail(new Error(`redis-server exited with ${code} before it was ready:\n${output}`));
      const fail = (error: Error): void => {
        cleanup();
        proc.kill('SIGKILL');
        reject(error);
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        proc.stdout.off('data', onData);
        proc.off('exit', onExit);
      };
      proc.stdout.on('data', onData);
      proc.stderr.on('data', onData);
      proc.once('exit', onExit);
    });
    // Keep draining output so the pipe never fills up and blocks the server.
    proc.stdout.resume();
    proc.stderr.resume();
  };

  const waitExit = async (signal: NodeJS.Signals): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    if (signal !== 'SIGKILL') proc.kill('SIGCONT');
    proc.kill(signal);
    await exited;
  };

  await launch();
  return {
    url: `${options.tls ? 'rediss' : 'redis'}://127.0.0.1:${port}`,
    host: '127.0.0.1',
    port,
    controllable: true,
    kill: () => waitExit('SIGKILL'),
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    restart: async () => {
      await waitExit('SIGKILL');
      await launch();
    },
    stop: async () => {
      await waitExit('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startContainer(): Promise<RedisServer> {
  const { getContainerRuntimeClient } = await import('testcontainers');
  await Promise.race([
    getContainerRuntimeClient(),
    new Promise((_, reject) => setTimeout(() => reject(new Error('no container engine answered within 3 s')), 3000).unref()),
  ]);
  const { RedisContainer } = await import('@testcontainers/redis');
  let container = await new RedisContainer('redis:7.4-alpine').withCommand(['redis-server', '--save', '', '--appendonly', 'no']).start();
  const unsupported = (): void => {
    throw new Error('pause/resume is not supported for a testcontainers Redis');
  };
  const server: RedisServer = {
    get url() {
      return container.getConnectionUrl();
    },
    get host() {
      return container.getHost();
    },
    get port() {
      return container.getPort();
    },
    controllable: false,
    kill: async () => {
      await container.stop({ timeout: 0 });
    },
    pause: unsupported,
    resume: unsupported,
    restart: async () => {
      container = await new RedisContainer('redis:7.4-alpine').withCommand(['redis-server', '--save', '', '--appendonly', 'no']).start();
    },
    stop: async () => {
      await container.stop();
    },
  };
  return server;
}
