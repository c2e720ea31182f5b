/**
 * Valkey GLIDE (`@valkey/valkey-glide` 2) on a test topology: `onGlide(topology)` opens one GLIDE client
 * (`GlideClient`, or `GlideClusterClient` on a Cluster) on the topology's seeds before the file's tests
 * and closes it after them; the topology it returns makes its lock clients on that GLIDE client (shut down
 * after each test). Checks (`redis`, `subscribers`, `command`, `keys`) and `lossyClient` stay on the base
 * topology's node-redis clients.
 */
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { createLockClient, type LockClient } from '../../src/index.js';
import type { Topology } from '../shared/topology.js';

export type Glide = GlideClient | GlideClusterClient;

// GLIDE's core logs every server error reply (relock's NOSCRIPT fallback, WRONGTYPE tests) at WARN.
Logger.setLoggerConfig('error');

/** Opens a GLIDE client on `topology`'s seeds: a cluster client when it is a Cluster. */
export async function openGlide(topology: Topology): Promise<Glide> {
  const addresses = topology.seeds.map((seed) => ({ ...seed }));
  return topology.name === 'cluster' ? GlideClusterClient.createClient({ addresses }) : GlideClient.createClient({ addresses });
}

/** `topology`, with lock clients on one GLIDE client of the file's (registers the file's hooks). */
export function onGlide(base: () => Topology): { topology: () => Topology; glide: () => Glide; base: () => Topology } {
  let glide: Glide | undefined;
  const made: LockClient[] = [];
  beforeAll(async () => {
    glide = await openGlide(base());
  }, 30_000);
  afterEach(async () => {
    await Promise.all(made.splice(0).map((c) => c.shutdown()));
  });
  afterAll(() => glide?.close());
  const topology = (): Topology => ({
    ...base(),
    name: `${base().name} on GLIDE`,
    client: (options) => {
      const client = createLockClient({ redis: glide!, ...options });
      made.push(client);
      return client;
    },
  });
  return { topology, glide: () => glide!, base };
}
