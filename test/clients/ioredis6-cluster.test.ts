/** The core suites, the lock contract and the client acceptance tests on a Redis Cluster through ioredis 6's `Cluster` (the newest major in the peer range). */
import { clientAcceptanceTests } from '../contract/clients.js';
import { lockContractTests } from '../contract/lock-contract.js';
import { IOREDIS6 } from '../shared/clients.js';
import { familyCoreTests } from '../shared/family-core.js';
import { ownershipCoreTests } from '../shared/ownership-core.js';
import { useClusterTopology } from '../shared/topology.js';

const { topology } = useClusterTopology(IOREDIS6);
clientAcceptanceTests(topology);
lockContractTests(topology);
familyCoreTests(topology);
ownershipCoreTests(topology);
