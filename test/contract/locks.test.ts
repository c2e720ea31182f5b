/**
 * The lock contract (every lock variant) and the one-kind-per-name matrix on a standalone Redis;
 * test/cluster/contract.test.ts runs them on a Cluster.
 */
import { useStandaloneTopology } from '../shared/topology.js';
import { kindMatrixTests } from './kinds.js';
import { clientAcceptanceTests } from './clients.js';
import { leaderJobContractTests } from './leader-job.js';
import { lockContractTests } from './lock-contract.js';

const topology = useStandaloneTopology();
clientAcceptanceTests(topology);
lockContractTests(topology);
leaderJobContractTests(topology);
kindMatrixTests(topology);
