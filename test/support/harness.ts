/**
 * The set-up most test files share: a redis-server of the file's own, a node-redis client on it, and
 * after each test the lock clients made with `lockClient()` closed and the child processes (workers, CLI
 * runs) the test started stopped; after the file, the clients registered with `closeBeforeStop` closed,
 * then the server stopped.
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
  /**
   * Registers `close` (of a client on the file's server) to run after the file's tests, before the
   * server stops; the last registered runs first. jest runs a file's `afterAll` hooks in the order they
   * were declared, so a client closed in an `afterAll` of its own, declared after this harness, would be
   * closed once its server is gone: it is between reconnect attempts then, and its pending retry timer
   * (node-redis's reconnect backoff, up to 2.2 s, which `close()` does not cancel; ioredis's
   * `disconnectTimeout`) outlives the file and keeps a jest worker from exiting (issue 17).
   */
  closeBeforeStop(close: () => Promise<unknown>): void;
}

/** Registers the hooks of a test file. `stopWorker` defaults to `stop()` (a kill). */
export function useRedis<P extends JsonLinesProcess = Worker>(options: { server?: StartOptions; stopWorker?: (worker: P) => Promise<unknown> } = {}): RedisHarness<P> {
  let server: RedisServer | undefined;
  let redis: Redis | undefined;
  const workers: P[] = [];
  const closers: Array<() => Promise<unknown>> = [];
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
    try {
      for (const close of closers.splice(0).reverse()) await close();
      await redis?.close();
    } finally {
      await server?.stop();
    }
  });
  return {
    get server() {
      return server!;
    },
    get redis() {
      return redis!;
    },
    workers,
    closeBeforeStop: (close) => void closers.push(close),
  };
}
