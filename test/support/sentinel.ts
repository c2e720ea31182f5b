/**
 * A real Sentinel deployment for tests: a primary, a replica that replicates through a TCP proxy (so a
 * test can cut replication without firewall rules), and one Sentinel (quorum 1, down-after 1000 ms).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, createSentinel } from 'redis';
import { freePort, SERVER_BIN, startRedis, type RedisServer } from './redis.js';
import { startProxy, type TcpProxy } from './tcp-proxy.js';
import { waitUntil } from './helpers.js';

export const MASTER_NAME = 'relock-test';

// Short reconnect delays: node-redis does not cancel a reconnect delay on close(), so a long one would
// keep the test process alive after the servers were killed.
const socket = { reconnectStrategy: (retries: number) => Math.min(50 * (retries + 1), 200) };
const newSentinel = (port: number) =>
  createSentinel({ name: MASTER_NAME, sentinelRootNodes: [{ host: '127.0.0.1', port }], nodeClientOptions: { socket }, sentinelClientOptions: { socket } });
/** The node-redis Sentinel client type these tests use. */
export type SentinelClient = ReturnType<typeof newSentinel>;

export interface SentinelSetup {
  readonly primary: RedisServer;
  readonly replica: RedisServer;
  /** The proxy the replica replicates through: `replication.mode = 'blackhole'` cuts replication. */
  readonly replication: TcpProxy;
  readonly sentinelPort: number;
  /** A connected node-redis Sentinel client (closed by `stop()`). */
  connect(): Promise<SentinelClient>;
  /** The port Sentinel currently reports for the primary. */
  primaryPort(): Promise<number>;
  /** `SENTINEL FAILOVER` and wait until the replica is the primary. */
  failover(): Promise<void>;
  /** Waits until Sentinel reports `port` as the primary. */
  waitForPrimary(port: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

async function command(url: string, args: string[]): Promise<unknown> {
  const client = createClient({ url });
  client.on('error', () => {});
  await client.connect();
  try {
    return await client.sendCommand(args);
  } finally {
    await client.close();
  }
}

export async function startSentinel(): Promise<SentinelSetup> {
  const common = ['--repl-diskless-sync-delay', '0', '--repl-timeout', '60'];
  const primary = await startRedis({ controllable: true, args: common });
  const replication = await startProxy('127.0.0.1', primary.port);
  const replica = await startRedis({ controllable: true, args: [...common, '--replicaof', '127.0.0.1', String(replication.port), '--replica-announce-ip', '127.0.0.1'] });
  await waitUntil(async () => String(await command(replica.url, ['INFO', 'replication'])).includes('master_link_status:up'), 10_000, 50, 'the replica to sync');
  // The primary sees the replica through the proxy; make sure it counts it before tests rely on WAIT.
  await waitUntil(async () => Number(await command(primary.url, ['WAIT', '1', '100'])) === 1, 10_000, 50, 'the replica to acknowledge');

  const dir = mkdtempSync(join(tmpdir(), 'relock-sentinel-'));
  const sentinelPort = await freePort();
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primary.port} 1`,
      `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
      `sentinel failover-timeout ${MASTER_NAME} 4000`,
      `sentinel parallel-syncs ${MASTER_NAME} 1`,
      '',
    ].join('\n'),
  );
  const sentinel: ChildProcess = spawn(SERVER_BIN, [conf, '--sentinel'], { stdio: 'ignore' });
  const sentinelUrl = `redis://127.0.0.1:${sentinelPort}`;
  const clients: Array<{ close(): Promise<unknown> }> = [];
  const primaryPort = async (): Promise<number> => {
    const reply = (await command(sentinelUrl, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME])) as [string, string] | null;
    return Number(reply?.[1] ?? 0);
  };
  const waitForPrimary = (port: number, timeoutMs = 45_000): Promise<void> =>
    waitUntil(async () => (await primaryPort().catch(() => 0)) === port, timeoutMs, 100, `Sentinel to report ${port} as primary`).then(() => {});
  const stopAll = async (): Promise<void> => {
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
    if (sentinel.exitCode === null) {
      const exited = new Promise((resolve) => sentinel.once('exit', resolve));
      sentinel.kill('SIGKILL');
      await exited;
    }
    await replication.close();
    await Promise.all([primary.stop(), replica.stop()]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPrimary(primary.port, 10_000);
    await waitUntil(
      async () => Number((await command(sentinelUrl, ['SENTINEL', 'REPLICAS', MASTER_NAME]) as unknown[]).length) >= 1,
      10_000,
      100,
      'Sentinel to discover the replica',
    );
  } catch (error) {
    await stopAll();
    throw error;
  }
  return {
    primary,
    replica,
    replication,
    sentinelPort,
    async connect() {
      const client = newSentinel(sentinelPort);
      client.on('error', () => {});
      await client.connect();
      clients.push(client);
      return client;
    },
    primaryPort,
    waitForPrimary,
    async failover() {
      // Sentinel aborts a forced failover when its last INFO of the replica is older than 5 s (it sends one
      // every 10 s), so ask again until the replica is promoted.
      const deadline = performance.now() + 45_000;
      for (;;) {
        await command(sentinelUrl, ['SENTINEL', 'FAILOVER', MASTER_NAME]).catch(() => undefined);
        try {
          await waitForPrimary(replica.port, 3000);
          return;
        } catch (error) {
          if (performance.now() > deadline) throw error;
        }
      }
    },
    stop: stopAll,
  };
}
