import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { lockCoreTests } from '../shared/lock-core.js';
import type { Topology } from '../shared/topology.js';
import { closeAll, connect, lockClient, numsub, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';

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
