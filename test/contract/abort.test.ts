/** Aborted waits of every primitive (test/contract/abort.ts) on a standalone Redis. */
import { useStandaloneTopology } from '../shared/topology.js';
import { abortTests } from './abort.js';

abortTests(useStandaloneTopology());
