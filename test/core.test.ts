/** The topology-independent core suite (test/shared/family-core.ts) on a standalone Redis; test/cluster/ runs it on a Cluster. */
import { familyCoreTests } from './shared/family-core.js';
import { ownershipCoreTests } from './shared/ownership-core.js';
import { useStandaloneTopology } from './shared/topology.js';

const topology = useStandaloneTopology();
familyCoreTests(topology);
ownershipCoreTests(topology);
