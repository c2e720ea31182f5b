import type { Adapter } from './types.js';

/** The least a Redis lock costs: set-if-absent with a lease, and compare-and-delete. */
const ACQUIRE = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0";
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

/** No per-command timer, no type mapping: set once on a view of the client, nothing passed per call. */
const COMMAND_OPTIONS = Object.freeze({ timeout: undefined, typeMapping: undefined, abortSignal: undefined });

interface RawClient {
  sendCommand(args: readonly string[]): Promise<unknown>;
  withCommandOptions?(options: object): RawClient;
}

/**
 * The floor: the best a hand-written lock does on the client relock uses, two EVALSHA round trips per
 * cycle (acquire, release) on a view of that node-redis client with its command options set once
 * (`withCommandOptions`), and no options per call (per-call options cost node-redis an object spread per
 * command: a floor that passes them is no floor, see issue 12). It does not wait: an acquire of a busy
 * key resolves to false, so it is measured only where nobody waits (scenarios 1 and 2). `floor-glide`
 * sends the same through a GLIDE client's `customCommand`, as relock-glide does.
 */
export async function floorAdapter(client: RawClient, impl: 'floor' | 'floor-glide' = 'floor'): Promise<Adapter> {
  const redis = client.withCommandOptions ? client.withCommandOptions(COMMAND_OPTIONS) : client;
  const [acquireSha, releaseSha] = (await Promise.all([ACQUIRE, RELEASE].map((s) => redis.sendCommand(['SCRIPT', 'LOAD', s])))) as string[];
  let tokens = 0;
  return {
    impl,
    mutex(name) {
      const token = `floor-${tokens++}`;
      return {
        acquire: async () => Number(await redis.sendCommand(['EVALSHA', acquireSha, '1', name, token, '30000'])) === 1,
        release: async () => void (await redis.sendCommand(['EVALSHA', releaseSha, '1', name, token])),
      };
    },
    close: async () => {},
  };
}
