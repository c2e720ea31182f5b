/** The core suites, the lock contract and the client acceptance tests on a Redis Cluster through iovalkey's `Cluster`. */
import { clientAcceptanceTests } from '../contract/clients.js';
import { leaderJobContractTests } from '../contract/leader-job.js';
import { lockContractTests } from '../contract/lock-contract.js';
import { IOVALKEY } from '../shared/clients.js';
import { familyCoreTests } from '../shared/family-core.js';
import { ownershipCoreTests } from '../shared/ownership-core.js';
import { useClusterTopology } from '../shared/topology.js';

const { topology } = useClusterTopology(IOVALKEY);
clientAcceptanceTests(topology);
lockContractTests(topology);
leaderJobContractTests(topology);
familyCoreTests(topology);
ownershipCoreTests(topology);
