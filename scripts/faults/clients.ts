/**
 * The Redis client a fault-suite run gives relock (`npm run faults -- --client NAME`): `node-redis` (the
 * default: relock's own connection for a URL, node-redis with its offline queue off), or the user's own
 * client of another family, opened as its users would with the library's defaults (`ioredis`, `iovalkey`:
 * `new Redis(url)`; `glide`: `GlideClient.createClient`) and passed as `redis`. The suite's checkers are
 * the same for every client.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { LockClientOptions } from '../../src/index.js';

export const FAULT_CLIENTS = ['node-redis', 'ioredis', 'iovalkey', 'glide'] as const;
export type FaultClient = (typeof FAULT_CLIENTS)[number];

/**
 * The scenarios `--client` runs when `--only` names none: Redis restarts, network faults (latency,
 * blackhole, reset, lost replies) and the Sentinel failover (skipped on GLIDE, which has no Sentinel
 * support): the faults where the client's reconnects decide what relock learns and when.
 */
export const CLIENT_SCENARIOS = [
  'redis-restart', 'redis-restart-stale-renewal', 'redis-restart-delayed', 'rw-redis-restart',
  'net-latency', 'net-blackhole', 'net-reset', 'unlock-reply-lost', 'acquire-reply-lost', 'acquire-orphan',
  'sentinel-failover',
];

/** A user's client for relock, and how to close it after `shutdown()`. */
export interface UserClient {
  /** What `createLockClient` gets: `{ url }` or `{ redis }`. */
  readonly options: Pick<LockClientOptions, 'url' | 'redis'>;
  close(): Promise<void>;
}

/**
 * ioredis `disconnectTimeout` of the suite's clients: `disconnect()` arms a timer that only the socket's
 * close clears, and the hygiene check counts timers left after shutdown (see test/shared/clients.ts).
 */
const DISCONNECT_TIMEOUT_MS = 100;

interface IoRedisLike {
  status: string;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  disconnect(): void;
}
type IoRedisClass = new (...args: unknown[]) => IoRedisLike;

/** Closes an ioredis client: at its `'end'` when connected, at once otherwise. */
const closeIoRedis = (client: IoRedisLike): Promise<void> =>
  new Promise((resolve) => {
    if (client.status === 'ready') client.once('end', () => resolve());
    else resolve();
    client.disconnect();
  });

/** Opens `client`'s family on `url` (a standalone Redis or a proxy in front of it). */
export async function openUserClient(client: FaultClient, url: string): Promise<UserClient> {
  if (client === 'node-redis') return { options: { url }, close: async () => {} };
  if (client === 'glide') {
    const { GlideClient } = await import('@valkey/valkey-glide');
    const { hostname, port } = new URL(url);
    const glide = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] });
    return { options: { redis: glide }, close: () => Promise.resolve(glide.close()) };
  }
  const { Redis } = (await import(client)) as { Redis: IoRedisClass };
  const io = new Redis(url, { disconnectTimeout: DISCONNECT_TIMEOUT_MS });
  io.on('error', () => {});
  if (io.status !== 'ready') await new Promise((resolve) => io.once('ready', resolve));
  return { options: { redis: io }, close: () => closeIoRedis(io) };
}

/**
 * A client of `client`'s family through Sentinel (master `name`, Sentinel on `sentinelPort`), for the
 * Sentinel scenario; undefined for node-redis, whose Sentinel client the scenario makes itself. Throws
 * for GLIDE (no Sentinel support: the scenario is skipped).
 */
export async function openSentinelClient(client: Exclude<FaultClient, 'node-redis' | 'glide'>, name: string, sentinelPort: number): Promise<UserClient> {
  const { Redis } = (await import(client)) as { Redis: IoRedisClass };
  const io = new Redis({ sentinels: [{ host: '127.0.0.1', port: sentinelPort }], name, disconnectTimeout: DISCONNECT_TIMEOUT_MS });
  io.on('error', () => {});
  if (io.status !== 'ready') await new Promise((resolve) => io.once('ready', resolve));
  return { options: { redis: io }, close: () => closeIoRedis(io) };
}

/** The client library and version a run used, for the report (read from its package.json, which GLIDE does not export). */
export function clientVersion(client: FaultClient): string {
  const pkg = { 'node-redis': '@redis/client', ioredis: 'ioredis', iovalkey: 'iovalkey', glide: '@valkey/valkey-glide' }[client];
  const read = (dir: string): { name?: string; version?: string } => (existsSync(join(dir, 'package.json')) ? (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string }) : {});
  let dir = dirname(createRequire(import.meta.url).resolve(pkg));
  while (read(dir).name !== pkg && dir !== dirname(dir)) dir = dirname(dir);
  return `${client === 'glide' ? 'Valkey GLIDE' : client} ${read(dir).version ?? '?'}`;
}
