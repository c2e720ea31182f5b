/**
 * The one-kind-per-name matrix on a standalone Redis, in a file of its own: the generated Lua pass
 * (scripts/mutants/lua-catalogue.ts) runs it for every primitive's scripts, where the whole contract suite
 * would be too long. test/cluster/contract.test.ts runs it on a Cluster.
 */
import { useStandaloneTopology } from '../shared/topology.js';
import { kindMatrixTests } from './kinds.js';

kindMatrixTests(useStandaloneTopology());
