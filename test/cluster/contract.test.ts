/**
 * The lock contract (every lock variant), the one-kind-per-name matrix and aborted waits of every
 * primitive (200 tries each: the 1,000-try run is standalone) on a real Redis Cluster (3 primaries,
 * 1 replica each).
 */
import { abortTests } from '../contract/abort.js';
import { clientAcceptanceTests } from '../contract/clients.js';
import { kindMatrixTests } from '../contract/kinds.js';
import { leaderJobContractTests } from '../contract/leader-job.js';
import { lockContractTests } from '../contract/lock-contract.js';
import { useClusterTopology } from '../shared/topology.js';

const { topology } = useClusterTopology();
clientAcceptanceTests(topology);
lockContractTests(topology);
leaderJobContractTests(topology);
kindMatrixTests(topology);
abortTests(topology, 200);
