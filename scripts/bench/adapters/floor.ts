import { Command, type Redis } from 'ioredis';
import { ACQUIRE as RELOCK_ACQUIRE, UNLOCK as RELOCK_UNLOCK } from '../../../src/lock/scripts.js';
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

/**
 * Redisson's RLock scripts (`RedissonLock.tryLockInnerAsync` and `unlockInnerAsync`, Redisson 3.x with the
 * unlock latch): KEYS lock; ARGV lease, owner. Release: KEYS lock, channel, latch; ARGV message, lease,
 * owner, publish command, latch TTL. 3 + 6 Redis calls per cycle (relock's: 4 + 4 on the happy path).
 */
const REDISSON_ACQUIRE = `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`;
const REDISSON_RELEASE = `local val = redis.call('get', KEYS[3])
if val ~= false then return tonumber(val) end
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
else
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], 1, 'px', ARGV[5])
  return 1
end`;
/** The latch TTL both hash floors pass (relock's default: `latchTtl`). */
const LATCH_TTL_MS = '10000';

/**
 * The design's own floors, on the same node-redis view as `floor`, with a fixed owner per task and no
 * client logic (no context, no watchdog, no hold record, no executor):
 * - `lua-floor`: relock's own RLock acquire and unlock scripts (src/lock/scripts.ts, `ACQUIRE`, `UNLOCK`),
 *   by EVALSHA with the arguments relock sends on the happy path (a first grant with hold count 0; an
 *   unlock guarded by the count 1, latch and channel keys of the lock's slot). What relock costs when its
 *   client adds nothing: relock / lua-floor is the client's share, the gap that is ours to close.
 * - `hash-floor`: Redisson's RLock scripts (`REDISSON_ACQUIRE`, `REDISSON_RELEASE`) the same way: what the
 *   reentrant hash design costs in Redis in the form its reference implementation gives it.
 * Like `floor`, neither waits: measured only where nobody waits.
 */
export async function hashFloorAdapter(client: RawClient, impl: 'lua-floor' | 'hash-floor'): Promise<Adapter> {
  const redis = client.withCommandOptions ? client.withCommandOptions(COMMAND_OPTIONS) : client;
  const [acquire, release] = impl === 'lua-floor' ? [RELOCK_ACQUIRE.source, RELOCK_UNLOCK.source] : [REDISSON_ACQUIRE, REDISSON_RELEASE];
  const [acquireSha, releaseSha] = (await Promise.all([acquire, release].map((s) => redis.sendCommand(['SCRIPT', 'LOAD', s])))) as string[];
  const granted = (reply: unknown): boolean => reply === null;
  if (impl === 'lua-floor') {
    return floor(impl, (key, token) => {
      const owner = `${token}:1`;
      const [latch, channel] = [`${key}:latch:${owner}`, `${key}:channel`];
      return {
        acquire: async () => granted(await redis.sendCommand(['EVALSHA', acquireSha, '1', key, LEASE_MS, owner, '', '0', 'lock'])),
        release: async () => void (await redis.sendCommand(['EVALSHA', releaseSha, '2', key, latch, owner, channel, 'publish', LATCH_TTL_MS, '0', '1'])),
      };
    });
  }
  // Redisson names an unlock latch per unlock call (`getUnlockLatchName(requestId)`): a latch shared by the
  // calls would replay the first release's answer and never release again.
  let calls = 0;
  return floor(impl, (key, token) => {
    const owner = `${token}:1`;
    const channel = `${key}:channel`;
    return {
      acquire: async () => granted(await redis.sendCommand(['EVALSHA', acquireSha, '1', key, LEASE_MS, owner])),
      release: async () => void (await redis.sendCommand(['EVALSHA', releaseSha, '3', key, channel, `${key}:latch:${calls++}`, '0', LEASE_MS, owner, 'publish', LATCH_TTL_MS])),
    };
  });
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
