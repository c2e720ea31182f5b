/**
 * A separate Node process using relock, driven by JSON lines on stdin, answering JSON lines on stdout.
 * argv[2]: JSON `{ url, lockWatchdogTimeout?, ownConnections? }` (`ownConnections`: the lock client gets
 * `url` and opens its own connections, instead of this worker's node-redis client). Commands:
 *   { cmd: 'acquire', name, waitMs?, leaseMs? }  → { type: 'acquired', ok, at } (at: monotonic ms, hrtime)
 *   { cmd: 'release', name }                     → { type: 'released' }
 *   { cmd: 'counter', name, key, rounds }        → { type: 'counted', rounds } (read-await-write under the lock)
 *   { cmd: 'block', ms }                         → blocks the event loop for `ms`, then { type: 'unblocked' }
 *   { cmd: 'fenced', name, rounds, leaseMs, abandonEvery }
 *                                                → { type: 'tokens', tokens } after `rounds` fenced acquisitions
 *                                                  (every `abandonEvery`-th hold is left to expire)
 * Every lock lost is reported as { type: 'lost', name, reason }.
 */
import { createInterface } from 'node:readline';
import { createClient } from 'redis';
import { createLockClient, IllegalMonitorStateError, type LockHandle } from '../../../src/index.js';

const args = JSON.parse(process.argv[2] ?? '{}') as { url: string; lockWatchdogTimeout?: number; ownConnections?: boolean };
const redis = createClient({ url: args.url });
redis.on('error', () => {});
await redis.connect();
const client = createLockClient({ ...(args.ownConnections ? { url: args.url } : { redis }), lockWatchdogTimeout: args.lockWatchdogTimeout });
process.on('SIGTERM', () => process.exit(0));
const handles = new Map<string, LockHandle>();
const say = (message: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(message)}\n`);
const now = (): number => Number(process.hrtime.bigint()) / 1e6;
client.on('lockLost', (event) => say({ type: 'lost', name: event.name, reason: event.reason, at: now() }));

say({ type: 'ready', pid: process.pid });
for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as Record<string, unknown> & { cmd: string; name: string };
  if (command.cmd === 'acquire') {
    try {
      const handle = await client.getLock(command.name).acquire({ waitMs: command.waitMs as number | undefined, leaseMs: command.leaseMs as number | undefined });
      handles.set(command.name, handle);
      say({ type: 'acquired', ok: true, at: now() });
    } catch (error) {
      say({ type: 'acquired', ok: false, error: (error as Error).name, at: now() });
    }
  } else if (command.cmd === 'release') {
    await handles.get(command.name)?.release();
    handles.delete(command.name);
    say({ type: 'released', at: now() });
  } else if (command.cmd === 'counter') {
    const rounds = command.rounds as number;
    for (let i = 0; i < rounds; i++) {
      await client.withLock(command.name, async () => {
        const value = Number((await redis.get(command.key as string)) ?? 0);
        await new Promise((resolve) => setImmediate(resolve));
        await redis.set(command.key as string, String(value + 1));
      });
    }
    say({ type: 'counted', rounds });
  } else if (command.cmd === 'fenced') {
    const lock = client.getFencedLock(command.name);
    const tokens: string[] = [];
    // Each round in a context of its own, as a job loop would: an abandoned hold belongs to its round alone,
    // and the next round takes the lock as another owner once its lease ends.
    while (tokens.length < (command.rounds as number)) {
      await client.runInContext(async () => {
        const token = await lock.tryLockAndGetToken(30, command.leaseMs as number, 'ms');
        if (token === undefined) return;
        tokens.push(token.toString());
        // A lease this short can run out before the unlock on a loaded machine: that is one more expiry
        // takeover, not a failure of what the test checks (the tokens). Every abandonEvery-th hold is left to expire.
        if (tokens.length % (command.abandonEvery as number) !== 0) {
          await lock.unlock().catch((error: unknown) => {
            if (!(error instanceof IllegalMonitorStateError)) throw error;
          });
        }
      });
    }
    say({ type: 'tokens', tokens });
  } else if (command.cmd === 'block') {
    const until = performance.now() + (command.ms as number);
    while (performance.now() < until);
    say({ type: 'unblocked', at: now() });
  } else if (command.cmd === 'exit') {
    break;
  }
}
await client.shutdown();
await redis.close();
