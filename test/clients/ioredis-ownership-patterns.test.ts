/** Ownership outside contexts in the patterns Node users write (issue 27), on ioredis (two connections of its own). */
import { IOREDIS } from '../shared/clients.js';
import { ownershipPatternTests } from '../shared/ownership-patterns.js';
import { useStandaloneTopology } from '../shared/topology.js';

ownershipPatternTests(useStandaloneTopology({ family: IOREDIS }), IOREDIS);
