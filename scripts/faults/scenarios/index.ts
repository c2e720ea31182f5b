/** Every scenario, in the order they run. */
import type { Scenario } from '../scenario.js';
import { networkScenarios } from './network.js';
import { processScenarios } from './process.js';
import { redisScenarios } from './redis.js';
import { scaleScenarios } from './scale.js';
import { skippedScenarios } from './skipped.js';

export const scenarios: Scenario[] = [...processScenarios, ...redisScenarios, ...networkScenarios, ...scaleScenarios, ...skippedScenarios];
