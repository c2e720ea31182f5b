/**
 * What a topology-independent ("core") test needs: lock clients on the deployment under test, a plain
 * Redis client for checks, and the subscriber count of a channel (PUBSUB NUMSUB, or SHARDNUMSUB on the
 * channel's primary in a cluster). Core suites in test/shared/ run on standalone Redis and on Cluster.
 */
import type { LockClient, LockClientOptions } from '../../src/index.js';

export interface RedisLike {
  del(key: string): Promise<number>;
  exists(key: string): Promise<number>;
  pTTL(key: string): Promise<number>;
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<unknown>;
  hGetAll(key: string): Promise<Record<string, string>>;
}

export interface Topology {
  readonly name: string;
  /** A lock client on the deployment, shut down after each test. */
  client(options?: Omit<LockClientOptions, 'redis' | 'url'>): LockClient;
  /** A node-redis client for checks. */
  readonly redis: RedisLike;
  /** Subscribers of `channel` right now. */
  subscribers(channel: string): Promise<number>;
}
