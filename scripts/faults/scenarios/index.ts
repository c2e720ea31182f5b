/** Every scenario, in the order they run. */
import type { AnyScenario } from '../scenario.js';
import { leaderElection } from './leader.js';
import { networkScenarios } from './network.js';
import { postgresFencedWrites } from './postgres.js';
import { plainSemaphoreScenarios, readWriteScenarios } from './primitives.js';
import { processScenarios } from './process.js';
import { redisScenarios } from './redis.js';
import { scaleScenarios } from './scale.js';
import { sentinelFailover } from './sentinel.js';

export const scenarios: AnyScenario[] = [
  ...processScenarios, ...redisScenarios, ...networkScenarios, ...readWriteScenarios, ...plainSemaphoreScenarios, ...scaleScenarios, leaderElection, postgresFencedWrites, sentinelFailover,
];
