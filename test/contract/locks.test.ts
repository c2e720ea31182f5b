/**
 * The lock contract (every lock variant) on a standalone Redis (the one-kind-per-name matrix is in
 * kinds.test.ts); test/cluster/contract.test.ts runs both on a Cluster.
 */
import { useStandaloneTopology } from '../shared/topology.js';
import { clientAcceptanceTests } from './clients.js';
import { leaderJobContractTests } from './leader-job.js';
import { lockContractTests } from './lock-contract.js';

const topology = useStandaloneTopology();
clientAcceptanceTests(topology);
lockContractTests(topology);
leaderJobContractTests(topology);
