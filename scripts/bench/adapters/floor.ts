import { Command, type Redis } from 'ioredis';
import type { Adapter, Impl, Mutex } from './types.js';

/** The least a Redis lock costs: set-if-absent with a lease, and compare-and-delete. */
const ACQUIRE = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0";
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
/** The lease every floor takes, in ms (relock's default lock watchdog timeout). */
const LEASE_MS = '30000';

/** No per-command timer, no type mapping: set once on a view of the client, nothing passed per call. */
const COMMAND_OPTIONS = Object.freeze({ timeout: undefined, typeMapping: undefined, abortSignal: undefined });

interface RawClient {
  sendCommand(args: readonly string[]): Promise<unknown>;
  withCommandOptions?(options: object): RawClient;
}

/** The mutex of one task on `key`, owned by `token`: each floor writes its two round trips out in full. */
type FloorMutex = (key: string, token: string) => Mutex;

/** An adapter whose every `mutex(name)` is `mutex` with a token of its own. */
function floor(impl: Impl, mutex: FloorMutex): Adapter {
  let tokens = 0;
  return { impl, mutex: (name) => mutex(name, `floor-${tokens++}`), close: async () => {} };
}

/**
 * The floor: the best a hand-written lock does on the client relock uses, two EVALSHA round trips per
 * cycle (acquire, release) on a view of that node-redis client with its command options set once
 * (`withCommandOptions`), and no options per call (per-call options cost node-redis an object spread per
 * command: a floor that passes them is no floor, see issue 12). It does not wait: an acquire of a busy
 * key resolves to false, so it is measured only where nobody waits (scenarios 1, 2 and 8).
 * `floor-setnx` acquires with a plain `SET key token NX PX lease` instead of the script (what
 * redis-semaphore does: a script-free acquire) and releases with the same compare-and-delete EVALSHA.
 * `floor-glide` sends the floor's commands through a GLIDE client's `customCommand`, as relock-glide does.
 */
export async function floorAdapter(client: RawClient, impl: 'floor' | 'floor-setnx' | 'floor-glide' = 'floor'): Promise<Adapter> {
  const redis = client.withCommandOptions ? client.withCommandOptions(COMMAND_OPTIONS) : client;
  const [acquireSha, releaseSha] = (await Promise.all([ACQUIRE, RELEASE].map((s) => redis.sendCommand(['SCRIPT', 'LOAD', s])))) as string[];
  if (impl === 'floor-setnx') {
    return floor(impl, (key, token) => ({
      acquire: async () => (await redis.sendCommand(['SET', key, token, 'NX', 'PX', LEASE_MS])) !== null,
      release: async () => void (await redis.sendCommand(['EVALSHA', releaseSha, '1', key, token])),
    }));
  }
  return floor(impl, (key, token) => ({
    acquire: async () => Number(await redis.sendCommand(['EVALSHA', acquireSha, '1', key, token, LEASE_MS])) === 1,
    release: async () => void (await redis.sendCommand(['EVALSHA', releaseSha, '1', key, token])),
  }));
}

/** Replies as strings, and nothing else: one options object for every command of `floor-ioredis`. */
const IOREDIS_OPTIONS = Object.freeze({ replyEncoding: 'utf8' as const });

/**
 * `floor-ioredis`: the floor's two EVALSHA round trips on the ioredis client the peers share, the best a
 * hand-written lock does on ioredis. Each command is a `new Command('evalsha', [...])` given to
 * `redis.sendCommand`, the path that `redis.evalsha(...)` and `redis.call(...)` end in: it skips their
 * generated wrapper (a rest-arguments array, an options object per call, the auto-pipelining check; `call`
 * also shifts the command name off its arguments). Measured on this 2-core machine (bare cycles against a
 * local redis-server, rotating rounds of 1.5 s; median Node CPU per cycle): at 64 tasks 20.1 µs against
 * 21.0 for `evalsha` and 21.9 for `call` (9 rounds; 21.0 against 28.0 and 22.0 in a 5-round run on a
 * busier machine), at 1 task the same as the others (148 µs against 155 and 148; 171 against 169 and 172);
 * 7.9–8.1 KB allocated per cycle against 8.0–8.6 (`evalsha`) and 8.1 (`call`). The cheapest, by a few
 * per cent at most: within a round's noise.
 */
export async function ioredisFloorAdapter(redis: Redis): Promise<Adapter> {
  const [acquireSha, releaseSha] = (await Promise.all([ACQUIRE, RELEASE].map((s) => redis.script('LOAD', s)))) as string[];
  return floor('floor-ioredis', (key, token) => ({
    acquire: async () => Number(await redis.sendCommand(new Command('evalsha', [acquireSha, '1', key, token, LEASE_MS], IOREDIS_OPTIONS))) === 1,
    release: async () => void (await redis.sendCommand(new Command('evalsha', [releaseSha, '1', key, token], IOREDIS_OPTIONS))),
  }));
}
