/**
 * The lock contract (every lock variant) and the one-kind-per-name matrix with lock clients on Valkey
 * GLIDE 2, on standalone Redis and on a Cluster. Lost-reply cases (`lossyClient`) go through node-redis
 * behind TCP proxies: GLIDE learns Cluster node addresses from the nodes themselves and would bypass them.
 */
import { describe } from '@jest/globals';
import { kindMatrixTests } from '../contract/kinds.js';
import { lockContractTests } from '../contract/lock-contract.js';
import { useClusterTopology, useStandaloneTopology } from '../shared/topology.js';
import { onGlide } from '../support/glide.js';

describe('GLIDE on standalone Redis', () => {
  const { topology } = onGlide(useStandaloneTopology());
  lockContractTests(topology);
  kindMatrixTests(topology);
});

describe('GLIDE on Redis Cluster', () => {
  const { topology } = onGlide(useClusterTopology().topology);
  lockContractTests(topology);
  kindMatrixTests(topology);
});
