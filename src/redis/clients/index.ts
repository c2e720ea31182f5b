import { InvalidArgumentError } from '../../errors.js';
import { redisUrlProblem, type ClientAdapter, type Connection, type ConnectionOptions } from '../connection.js';
import { glide } from './glide.js';
import { ioredis } from './ioredis.js';
import { nodeRedis } from './node-redis.js';
import { urlConnection } from './url.js';

/**
 * The client families relock recognises, asked in this order; the first whose `recognises` accepts the
 * user's object builds the connection. Recognition is by shape (no `instanceof`, no import of a client
 * package the user did not install).
 */
const ADAPTERS: readonly ClientAdapter[] = [glide, ioredis, nodeRedis];

/** What each family is created with, for the message about an object no adapter recognises. */
const EXPECTED =
  'node-redis (createClient, createCluster or createSentinel from "redis", v5 or v6), ioredis / iovalkey (new Redis(...), new Cluster([...])), ' +
  'or Valkey GLIDE 2 (GlideClient, GlideClusterClient); ' +
  'a node-redis client has `isReady` and `sendCommand`, an ioredis one `call` and `status`, a GLIDE one `customCommand` and `getPubSubMessage`';

/** Builds the `Connection` for a user-supplied client or a URL. Throws `InvalidArgumentError` for neither, a bad URL or an unknown client. */
export function openConnection(options: ConnectionOptions): Connection {
  if (options.redis !== undefined) {
    const client = options.redis;
    if (client === null || typeof client !== 'object') {
      throw new InvalidArgumentError('redis', `expected a Redis client: ${EXPECTED}; got ${client === null ? 'null' : typeof client}`);
    }
    const adapter = ADAPTERS.find((a) => a.recognises(client));
    if (adapter === undefined) throw new InvalidArgumentError('redis', `not a Redis client relock recognises (it has none of the marks below): expected ${EXPECTED}`);
    return adapter.open(client, options.onError);
  }
  if (options.url === undefined) {
    throw new InvalidArgumentError('options', 'give either `redis` (a connected Redis client) or `url` (such as "redis://localhost:6379")');
  }
  const problem = redisUrlProblem(options.url);
  if (problem) throw new InvalidArgumentError('url', problem);
  return urlConnection(options.url, options.onError);
}
