/**
 * A separate Node process holding fair and read-write locks, driven by JSON lines on stdin, answering
 * JSON lines on stdout. Each acquisition runs in a context of its own, so one process holds several
 * owners, told apart by `id`.
 * argv[2]: JSON `{ url, lockWatchdogTimeout?, fairLockWaitTimeout? }`. Commands:
 *   { cmd: 'acquire', id, kind, name, waitMs?, leaseMs?, holdMs? }
 *       kind: 'fair' | 'read' | 'write' → { type: 'acquired:<id>', ok, at } (at: hrtime ms, comparable
 *       across processes); with `holdMs` the lock is released that long after, then { type: 'released:<id>', at }
 *   { cmd: 'release', id }                         → { type: 'released:<id>', ok, error?, at }
 *   { cmd: 'cycles', name, loops, rounds }         → `loops` concurrent tasks, each `rounds` times read
 *       lock + unlock on its own lock object → { type: 'cycled', errors, ms }
 *   { cmd: 'exit' }                                → shuts the lock client down (deleting pending unlock latches) and exits
 * Every lock lost is reported as { type: 'lost', name, reason }.
 */
import { createInterface } from 'node:readline';
import { createClient } from 'redis';
import { createLockClient, runInContext, type LockHandle, type RLock } from '../../../src/index.js';

const args = JSON.parse(process.argv[2] ?? '{}') as { url: string; lockWatchdogTimeout?: number; fairLockWaitTimeout?: number };
const redis = createClient({ url: args.url });
redis.on('error', () => {});
await redis.connect();
const client = createLockClient({ redis, lockWatchdogTimeout: args.lockWatchdogTimeout, fairLockWaitTimeout: args.fairLockWaitTimeout });
process.on('SIGTERM', () => process.exit(0));
const handles = new Map<string, LockHandle>();
const say = (message: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(message)}\n`);
const now = (): number => Number(process.hrtime.bigint()) / 1e6;
client.on('lockLost', (event) => say({ type: 'lost', name: event.name, reason: event.reason, at: now() }));

function lockOf(kind: string, name: string): RLock {
  if (kind === 'fair') return client.getFairLock(name);
  const rw = client.getReadWriteLock(name);
  return kind === 'read' ? rw.readLock() : rw.writeLock();
}

async function release(id: string): Promise<void> {
  const handle = handles.get(id);
  handles.delete(id);
  try {
    await handle?.release();
    say({ type: `released:${id}`, ok: true, at: now() });
  } catch (error) {
    say({ type: `released:${id}`, ok: false, error: (error as Error).name, at: now() });
  }
}

async function acquire(command: Record<string, unknown>): Promise<void> {
  const id = command.id as string;
  try {
    const lock = lockOf(command.kind as string, command.name as string);
    const handle = await runInContext(() => lock.acquire({ waitMs: command.waitMs as number | undefined, leaseMs: command.leaseMs as number | undefined }));
    handles.set(id, handle);
    say({ type: `acquired:${id}`, ok: true, at: now() });
    if (typeof command.holdMs === 'number') setTimeout(() => void release(id), command.holdMs);
  } catch (error) {
    say({ type: `acquired:${id}`, ok: false, error: (error as Error).name, at: now() });
  }
}

async function cycles(name: string, loops: number, rounds: number): Promise<void> {
  const started = performance.now();
  let errors = 0;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      const lock = client.getReadWriteLock(name).readLock();
      for (let i = 0; i < rounds; i++) {
        try {
          await lock.lock();
          await lock.unlock();
        } catch {
          errors++;
        }
      }
    }),
  );
  say({ type: 'cycled', errors, ms: performance.now() - started });
}

say({ type: 'ready', pid: process.pid });
for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as Record<string, unknown> & { cmd: string };
  if (command.cmd === 'acquire') void acquire(command);
  else if (command.cmd === 'release') await release(command.id as string);
  else if (command.cmd === 'cycles') void cycles(command.name as string, command.loops as number, command.rounds as number);
  else if (command.cmd === 'exit') break;
}
await client.shutdown();
await redis.close();
