/** RFencedResource on a standalone Redis, with EVALSHA and with Redis Functions. */
import { useStandaloneTopology } from '../shared/topology.js';
import { fencedResourceTests } from './fenced-resource-core.js';

fencedResourceTests(useStandaloneTopology());
