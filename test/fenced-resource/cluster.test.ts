/** RFencedResource on a real Redis Cluster (3 primaries, 1 replica each), with EVALSHA and with Redis Functions. */
import { useClusterTopology } from '../shared/topology.js';
import { fencedResourceTests } from './fenced-resource-core.js';

fencedResourceTests(useClusterTopology().topology);
