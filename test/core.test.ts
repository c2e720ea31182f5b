/** The topology-independent core suites (test/shared/) on a standalone Redis; test/cluster/ runs them on a Cluster. */
import { familyCoreTests } from './shared/family-core.js';
import { lockCoreTests } from './shared/lock-core.js';
import { ownershipCoreTests } from './shared/ownership-core.js';
import type { Topology } from './shared/topology.js';
import { useRedis } from './support/harness.js';
import { lockClient, numsub } from './support/helpers.js';

const env = useRedis();
const topology = (): Topology => ({
  name: 'standalone',
  client: (options) => lockClient(env.redis, options),
  redis: env.redis,
  subscribers: (channel) => numsub(env.redis, channel),
});

lockCoreTests(topology);
familyCoreTests(topology);
ownershipCoreTests(topology);
