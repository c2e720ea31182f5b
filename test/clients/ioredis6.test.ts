/** The core suites, the lock contract and the client acceptance tests on a standalone Redis through ioredis 6 (the newest major in the peer range). */
import { clientAcceptanceTests } from '../contract/clients.js';
import { lockContractTests } from '../contract/lock-contract.js';
import { IOREDIS6 } from '../shared/clients.js';
import { familyCoreTests } from '../shared/family-core.js';
import { ownershipCoreTests } from '../shared/ownership-core.js';
import { useStandaloneTopology } from '../shared/topology.js';

const topology = useStandaloneTopology({ family: IOREDIS6 });
clientAcceptanceTests(topology);
lockContractTests(topology);
familyCoreTests(topology);
ownershipCoreTests(topology);
