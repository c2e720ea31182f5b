/**
 * The set-up most test files share: a redis-server of the file's own, a node-redis client on it, and
 * after each test the lock clients made with `lockClient()` closed and the child processes (workers, CLI
 * runs) the test started stopped.
 */
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { closeAll, connect, type JsonLinesProcess, type Redis, type Worker } from './helpers.js';
import { startRedis, type RedisServer, type StartOptions } from './redis.js';

export interface RedisHarness<P extends JsonLinesProcess = Worker> {
  /** The file's redis-server (valid once `beforeAll` ran). */
  readonly server: RedisServer;
  /** A node-redis client on it (valid once `beforeAll` ran). */
  readonly redis: Redis;
  /** Child processes to stop after the current test: a test pushes the ones it starts. */
  readonly workers: P[];
}

/** Registers the hooks of a test file. `stopWorker` defaults to `stop()` (a kill). */
export function useRedis<P extends JsonLinesProcess = Worker>(options: { server?: StartOptions; stopWorker?: (worker: P) => Promise<unknown> } = {}): RedisHarness<P> {
  let server: RedisServer | undefined;
  let redis: Redis | undefined;
  const workers: P[] = [];
  const stopWorker = options.stopWorker ?? ((worker: P) => worker.stop());
  beforeAll(async () => {
    server = await startRedis(options.server);
    redis = await connect(server.url);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map(stopWorker));
    await closeAll();
  });
  afterAll(async () => {
    await redis?.close();
    await server?.stop();
  });
  return {
    get server() {
      return server!;
    },
    get redis() {
      return redis!;
    },
    workers,
  };
}
