/** The topology-independent core suites (test/shared/) on a standalone Redis; test/cluster/ runs them on a Cluster. */
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { familyCoreTests } from './shared/family-core.js';
import { lockCoreTests } from './shared/lock-core.js';
import type { Topology } from './shared/topology.js';
import { closeAll, connect, lockClient, numsub, type Redis } from './support/helpers.js';
import { startRedis, type RedisServer } from './support/redis.js';

let server: RedisServer;
let redis: Redis;
let topology: Topology;

beforeAll(async () => {
  server = await startRedis();
  redis = await connect(server.url);
  topology = { name: 'standalone', client: (options) => lockClient(redis, options), redis, subscribers: (channel) => numsub(redis, channel) };
});
afterEach(closeAll);
afterAll(async () => {
  await redis.close();
  await server.stop();
});

lockCoreTests(() => topology);
familyCoreTests(() => topology);
