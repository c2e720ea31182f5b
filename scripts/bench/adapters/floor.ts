import type { Adapter } from './types.js';

/** The least a Redis lock costs: set-if-absent with a lease, and compare-and-delete. */
const ACQUIRE = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0";
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

/** What relock passes to `sendCommand`: no per-command timer, no type mapping (see src/redis/connection.ts). */
const COMMAND_OPTIONS = Object.freeze({ timeout: undefined, typeMapping: undefined, abortSignal: undefined });

interface RawClient {
  sendCommand(args: readonly string[], options?: object): Promise<unknown>;
}

/**
 * The floor: two EVALSHA round trips per cycle (acquire, release) on the node-redis client relock uses,
 * sent the way relock sends its commands. It does not wait: an acquire of a busy key resolves to false,
 * so it is measured only where nobody waits (scenarios 1 and 2). `floor-glide` sends the same through a
 * GLIDE client's `customCommand`, as relock-glide does.
 */
export async function floorAdapter(redis: RawClient, impl: 'floor' | 'floor-glide' = 'floor'): Promise<Adapter> {
  const [acquireSha, releaseSha] = (await Promise.all([ACQUIRE, RELEASE].map((s) => redis.sendCommand(['SCRIPT', 'LOAD', s], COMMAND_OPTIONS)))) as string[];
  let tokens = 0;
  return {
    impl,
    mutex(name) {
      const token = `floor-${tokens++}`;
      return {
        acquire: async () => Number(await redis.sendCommand(['EVALSHA', acquireSha!, '1', name, token, '30000'], COMMAND_OPTIONS)) === 1,
        release: async () => void (await redis.sendCommand(['EVALSHA', releaseSha!, '1', name, token], COMMAND_OPTIONS)),
      };
    },
    close: async () => {},
  };
}
