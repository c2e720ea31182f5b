import { InvalidArgumentError } from '../../errors.js';
import { redisUrlProblem, type ClientAdapter, type Connection, type ConnectionOptions } from '../connection.js';
import { glide } from './glide.js';
import { nodeRedis, nodeRedisUrlConnection } from './node-redis.js';

/**
 * The client families relock recognises, asked in this order; the first whose `recognises` accepts the
 * user's object builds the connection. Recognition is by shape (no `instanceof`, no import of a client
 * package the user did not install).
 */
const ADAPTERS: readonly ClientAdapter[] = [glide, nodeRedis];

/** What each family is created with, for the message about an object no adapter recognises. */
const EXPECTED = 'node-redis (createClient, createCluster or createSentinel from "redis", v5 or v6) or Valkey GLIDE 2 (GlideClient, GlideClusterClient)';

/** Builds the `Connection` for a user-supplied client or a URL. Throws `InvalidArgumentError` for neither, a bad URL or an unknown client. */
export function openConnection(options: ConnectionOptions): Connection {
  if (options.redis !== undefined) {
    const client = options.redis;
    if (client === null || typeof client !== 'object') {
      throw new InvalidArgumentError('redis', `expected a Redis client: ${EXPECTED}; got ${client === null ? 'null' : typeof client}`);
    }
    if (typeof (client as { status?: unknown }).status === 'string' && typeof (client as { evalsha?: unknown }).evalsha === 'function' && !('isReady' in client)) {
      throw new InvalidArgumentError('redis', 'this looks like an ioredis client; relock talks to Redis through node-redis: pass createClient(), createCluster() or createSentinel() from "redis" (v5 or v6), or give `url`');
    }
    const adapter = ADAPTERS.find((a) => a.recognises(client));
    if (adapter === undefined) throw new InvalidArgumentError('redis', `not a Redis client relock recognises: expected ${EXPECTED}`);
    return adapter.open(client, options.onError);
  }
  if (options.url === undefined) {
    throw new InvalidArgumentError('options', 'give either `redis` (a connected Redis client) or `url` (such as "redis://localhost:6379")');
  }
  const problem = redisUrlProblem(options.url);
  if (problem) throw new InvalidArgumentError('url', problem);
  return nodeRedisUrlConnection(options.url, options.onError);
}
