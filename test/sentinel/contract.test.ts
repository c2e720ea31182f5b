/**
 * Leader election and scheduled-job locks (issue 32) and RFencedResource (issue 33, EVALSHA and Redis
 * Functions) on Sentinel: lock clients on a node-redis Sentinel client (a primary, a replica, one
 * Sentinel). The suites that lose replies (`lossyClient`) do not run here.
 */
import { leaderJobContractTests } from '../contract/leader-job.js';
import { fencedResourceTests } from '../fenced-resource/fenced-resource-core.js';
import { useSentinelTopology } from '../shared/sentinel-topology.js';

const topology = useSentinelTopology();
leaderJobContractTests(topology);
fencedResourceTests(topology);
