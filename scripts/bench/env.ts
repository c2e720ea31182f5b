/**
 * The benchmark's surroundings: the Redis it runs against (its own redis-server unless REDIS_URL is
 * set), a probe connection for INFO, and what is printed about the machine and the versions.
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { startRedis, type RedisServer } from '../../test/support/redis.js';
import { parseCommandStats, type CommandStats } from './measure.js';

export interface Environment {
  node: string;
  redis: string;
  cpu: string;
  cores: number;
  memoryGb: number;
  /** 1-minute load average when the run started: the machine may be shared. */
  loadAverage: number;
  redisSource: 'REDIS_URL' | 'local redis-server';
  versions: Record<string, string>;
}

/** A connection used only to read INFO and clean up; it never takes part in a measurement. */
export interface Probe {
  readonly url: string;
  commandStats(): Promise<CommandStats>;
  /** Deletes the keys whose names contain `marker` (SCAN + UNLINK). */
  cleanup(marker: string): Promise<void>;
  environment(): Promise<Environment>;
  close(): Promise<void>;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The installed version of a dependency (read from node_modules: not every package exports its package.json). */
function packageVersion(name: string): string {
  try {
    const path = join(ROOT, 'node_modules', name, 'package.json');
    return String((JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version).replace(/^v/, '');
  } catch {
    return 'unknown';
  }
}

export async function openProbe(): Promise<Probe> {
  const server: RedisServer = await startRedis();
  const client = createClient({ url: server.url });
  client.on('error', () => {});
  await client.connect();
  return {
    url: server.url,
    commandStats: async () => parseCommandStats(await client.info('commandstats')),
    async cleanup(marker) {
      for await (const batch of client.scanIterator({ MATCH: `*${marker}*`, COUNT: 1000 })) {
        const keys = Array.isArray(batch) ? batch : [batch];
        if (keys.length > 0) await client.unlink(keys);
      }
    },
    async environment() {
      const info = await client.info('server');
      const cpuList = cpus();
      return {
        node: process.version,
        redis: /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown',
        cpu: cpuList[0]?.model.trim() ?? 'unknown',
        cores: cpuList.length,
        memoryGb: Math.round(totalmem() / 2 ** 30),
        loadAverage: Math.round(loadavg()[0] * 100) / 100,
        redisSource: process.env.REDIS_URL ? 'REDIS_URL' : 'local redis-server',
        versions: Object.fromEntries(
          ['redis', 'ioredis', '@valkey/valkey-glide', 'redlock', '@sesamecare-oss/redlock', 'redis-semaphore', 'hdr-histogram-js'].map((name) => [name, packageVersion(name)]),
        ),
      };
    },
    async close() {
      await client.close();
      await server.stop();
    },
  };
}
