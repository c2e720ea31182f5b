/** Ownership outside contexts in the patterns Node users write (issue 27), on node-redis; test/clients/ioredis-ownership-patterns.test.ts runs them on ioredis. */
import { ownershipPatternTests } from '../shared/ownership-patterns.js';
import { useStandaloneTopology } from '../shared/topology.js';

ownershipPatternTests(useStandaloneTopology(), undefined);
