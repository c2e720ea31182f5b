/**
 * The Sentinel topology of the core and contract suites (issues 32, 33): lock clients on a node-redis
 * Sentinel client (`createSentinel`), checks on the primary Sentinel reports. The deployment is
 * test/support/sentinel.ts's (a primary, a replica, one Sentinel); no test of these suites fails over.
 */
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { createLockClient, type LockClient } from '../../src/index.js';
import { connect, keys, numsub, type Redis } from '../support/helpers.js';
import { startSentinel, type SentinelClient, type SentinelSetup } from '../support/sentinel.js';
import type { Topology } from './topology.js';

/**
 * The topology of a test file with a Sentinel deployment of its own (started before its tests, stopped
 * after them; registers the file's hooks). `client()` makes lock clients on one shared node-redis Sentinel
 * client, shut down after each test; `redis`, `seeds`, `subscribers`, `command` and `keys` are the primary's.
 * `lossyClient` is not supported (it rejects): suites that lose replies do not run on Sentinel.
 */
export function useSentinelTopology(): () => Topology {
  let setup: SentinelSetup | undefined;
  let sentinel: SentinelClient;
  let primary: Redis | undefined;
  let primaryPort = 0;
  const clients: LockClient[] = [];
  beforeAll(async () => {
    setup = await startSentinel();
    sentinel = await setup.connect();
    primaryPort = await setup.primaryPort();
    primary = await connect(`redis://127.0.0.1:${primaryPort}`);
  }, 60_000);
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.shutdown()));
  });
  afterAll(async () => {
    try {
      await primary?.close();
    } finally {
      await setup?.stop(); // closes the Sentinel client too
    }
  });
  return () => ({
    name: 'sentinel',
    client: (options) => {
      const made = createLockClient({ redis: sentinel, ...options });
      clients.push(made);
      return made;
    },
    redis: primary!,
    // The primary (what a second, plain client of a suite dials), not Sentinel.
    seeds: [{ host: '127.0.0.1', port: primaryPort }],
    subscribers: (channel) => numsub(primary!, channel),
    command: (_key, args) => primary!.sendCommand(args),
    keys: (pattern) => keys(primary!, pattern),
    lossyClient: () => Promise.reject(new Error('lossyClient is not supported on Sentinel (no proxied Sentinel client)')),
  });
}
