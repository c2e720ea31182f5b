/**
 * The lock contract and the one-kind-per-name matrix in `scripting: 'functions'` mode, as a Redis user with
 * exactly the least-privilege rule of docs/security.md for that mode (key prefix `app:`).
 */
import { useStandaloneTopology } from '../shared/topology.js';
import { kindMatrixTests } from './kinds.js';
import { leaderJobContractTests } from './leader-job.js';
import { lockContractTests } from './lock-contract.js';

const topology = useStandaloneTopology({ scripting: 'functions', acl: { mode: 'functions', keyPrefix: 'app:' } });
lockContractTests(topology);
leaderJobContractTests(topology);
kindMatrixTests(topology);
