/** RFencedResource through ioredis on a standalone Redis (the other client families share its scripts). */
import { useStandaloneTopology } from '../shared/topology.js';
import { IOREDIS } from '../shared/clients.js';
import { fencedResourceTests } from './fenced-resource-core.js';

fencedResourceTests(useStandaloneTopology({ family: IOREDIS }));
