/**
 * A separate Node process using relock's semaphores and latch, driven by JSON lines on stdin, answering
 * JSON lines on stdout. argv[2]: JSON `{ url, lockWatchdogTimeout?, clockOffsetMs? }`; `clockOffsetMs`
 * shifts this process's `Date.now()` and `performance.now()` (a client whose clock is wrong), while `at`
 * fields use `process.hrtime` (the system's monotonic clock, comparable across processes). Commands:
 *   { cmd: 'acquire', name, permits?, waitMs?, leaseMs? }   expirable permits → { type: 'acquired', ok, ids, at }
 *   { cmd: 'release', name }                                → { type: 'released', at } (the last acquired permits)
 *   { cmd: 'take', name, permits, waitMs? }                 RSemaphore permits → { type: 'taken', ok, at }
 *   { cmd: 'give', name, permits }                          RSemaphore release → { type: 'given', at }
 *   { cmd: 'loop', kind, name, oracle, workers, rounds, leaseMs?, holdMs }
 *       `workers` concurrent loops of `rounds` rounds: acquire one permit of `kind` ('expirable' or
 *       'semaphore'), enter the oracle, hold `holdMs`–2×`holdMs`, leave, release → { type: 'looped',
 *       expired } (`expired`: releases that found the permit's lease already over, on a stalled machine).
 *       Oracle `counter:<key>`: INCR on enter, DECR on leave. Oracle `expiring:<key>`: a sorted set of
 *       holders scored by their permit's expiry (read from Redis), expired entries dropped first, so a
 *       killed holder counts until its permit expires. Both keep their highest count in `<key>:max`.
 *   { cmd: 'await', name, waitMs? }                          latch, in the background → { type: 'opened', ok, at }
 *   { cmd: 'countDown', name }                               → { type: 'counted', count }
 *   { cmd: 'exit' }
 * Every permit lost is reported as { type: 'lost', name, reason }.
 */
import { createInterface } from 'node:readline';
import { createClient } from 'redis';
import { createLockClient, PermitNotHeldError, type PermitHandle } from '../../../src/index.js';

const args = JSON.parse(process.argv[2] ?? '{}') as { url: string; lockWatchdogTimeout?: number; clockOffsetMs?: number };
if (args.clockOffsetMs) {
  const offset = args.clockOffsetMs;
  const dateNow = Date.now.bind(Date);
  const perfNow = performance.now.bind(performance);
  Date.now = () => dateNow() + offset;
  performance.now = () => perfNow() + offset;
}
const redis = createClient({ url: args.url });
redis.on('error', () => {});
await redis.connect();
const client = createLockClient({ redis, lockWatchdogTimeout: args.lockWatchdogTimeout });
const handles = new Map<string, PermitHandle>();
const say = (message: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(message)}\n`);
const now = (): number => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
client.on('lockLost', (event) => say({ type: 'lost', name: event.name, reason: event.reason, at: now() }));

const ENTER_COUNTER = `local v = redis.call('incr', KEYS[1])
if v > tonumber(redis.call('get', KEYS[2]) or '0') then redis.call('set', KEYS[2], v) end
return v`;
const ENTER_EXPIRING = `local t = redis.call('time')
redis.call('zremrangebyscore', KEYS[1], '-inf', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
local v = redis.call('zcard', KEYS[1])
if v > tonumber(redis.call('get', KEYS[2]) or '0') then redis.call('set', KEYS[2], v) end
return v`;

let expired = 0;

/** One holder: acquire, enter the oracle, hold, leave, release. */
async function round(kind: string, name: string, oracle: string, leaseMs: number | undefined, holdMs: number): Promise<void> {
  const mode = oracle.slice(0, oracle.indexOf(':'));
  const key = oracle.slice(mode.length + 1);
  const oracleKeys = [key, `${key}:max`];
  const hold = (): Promise<void> => sleep(holdMs * (1 + Math.random()));
  if (kind === 'semaphore') {
    const semaphore = client.getSemaphore(name);
    await semaphore.acquire();
    await redis.eval(ENTER_COUNTER, { keys: oracleKeys });
    await hold();
    await redis.decr(key);
    await semaphore.release();
    return;
  }
  const semaphore = client.getPermitExpirableSemaphore(name);
  const handle = await semaphore.acquire({ leaseMs: leaseMs });
  if (mode === 'counter') {
    await redis.eval(ENTER_COUNTER, { keys: oracleKeys });
    await hold();
    await redis.decr(key);
  } else {
    const expiry = await redis.zScore(semaphore.key, handle.id);
    if (expiry === null) throw new Error(`permit ${handle.id} is gone right after acquire`);
    await redis.eval(ENTER_EXPIRING, { keys: oracleKeys, arguments: [handle.id, String(expiry)] });
    await hold();
    await redis.zRem(key, handle.id);
  }
  await handle.release().catch((error: unknown) => {
    if (!(error instanceof PermitNotHeldError)) throw error;
    expired++;
  });
}

say({ type: 'ready', pid: process.pid, clientId: client.id, dateNow: Date.now() });
for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as Record<string, unknown> & { cmd: string; name: string };
  const { name } = command;
  if (command.cmd === 'acquire') {
    try {
      const handle = await client.getPermitExpirableSemaphore(name).acquire({
        permits: command.permits as number | undefined,
        waitMs: command.waitMs as number | undefined,
        leaseMs: command.leaseMs as number | undefined,
      });
      handles.set(name, handle);
      say({ type: 'acquired', ok: true, ids: handle.ids, at: now() });
    } catch (error) {
      say({ type: 'acquired', ok: false, error: (error as Error).name, at: now() });
    }
  } else if (command.cmd === 'release') {
    await handles.get(name)?.release();
    handles.delete(name);
    say({ type: 'released', at: now() });
  } else if (command.cmd === 'take') {
    const ok = await client.getSemaphore(name).tryAcquire(command.permits as number, (command.waitMs as number | undefined) ?? -1, 'ms');
    say({ type: 'taken', ok, at: now() });
  } else if (command.cmd === 'give') {
    await client.getSemaphore(name).release(command.permits as number);
    say({ type: 'given', at: now() });
  } else if (command.cmd === 'loop') {
    const { kind, oracle, workers, rounds, leaseMs, holdMs } = command as unknown as { kind: string; oracle: string; workers: number; rounds: number; leaseMs?: number; holdMs: number };
    void Promise.all(
      Array.from({ length: workers }, async () => {
        for (let i = 0; i < rounds; i++) await round(kind, name, oracle, leaseMs, holdMs);
      }),
    ).then(
      () => say({ type: 'looped', expired }),
      (error: unknown) => say({ type: 'looped', error: String(error) }),
    );
  } else if (command.cmd === 'await') {
    void client
      .getCountDownLatch(name)
      .await((command.waitMs as number | undefined) ?? -1, 'ms')
      .then((ok) => say({ type: 'opened', ok, at: now() }));
  } else if (command.cmd === 'countDown') {
    say({ type: 'counted', count: await client.getCountDownLatch(name).countDown(), at: now() });
  } else if (command.cmd === 'exit') {
    break;
  }
}
await client.shutdown();
await redis.close();
