/**
 * Heap per held watchdog lock (issue 12's "memory per held lock"): holds `N` locks of distinct names on
 * one client, without and with handles, and prints the heap growth per hold after a full GC. Run with
 * `node --expose-gc --import tsx scripts/bench/held-heap.ts [redis-url] [N]` (default
 * `redis://127.0.0.1:6379`, 10,000); `OTEL=0` creates the client with `otel: false` (no observer hold
 * records). Two figures per mode: the lock objects alone, and what holding adds.
 */
import { createClient } from 'redis';
import { createLockClient, type LockHandle, type RLock } from '../../src/index.js';

const url = process.argv[2] ?? 'redis://127.0.0.1:6379';
const n = Number(process.argv[3] ?? 10_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

function heap(): number {
  for (let i = 0; i < 3; i++) gc!();
  return process.memoryUsage().heapUsed;
}

async function measure(withHandles: boolean): Promise<void> {
  const redis = await createClient({ url }).connect();
  const client = createLockClient({ redis, otel: process.env.OTEL === "0" ? false : undefined });
  const prefix = `held-heap:${withHandles ? 'h' : 'l'}:${process.pid}:`;
  const before = heap();
  const locks: RLock[] = Array.from({ length: n }, (_, i) => client.getLock(prefix + i));
  const objects = heap();
  const handles: LockHandle[] = [];
  for (let i = 0; i < n; i += 200) {
    await Promise.all(
      locks.slice(i, i + 200).map(async (lock) => {
        if (withHandles) handles.push(await lock.acquire());
        else await lock.lock();
      }),
    );
  }
  const held = heap();
  const kb = (bytes: number): string => (bytes / n / 1024).toFixed(2);
  console.log(`${withHandles ? 'acquire() handles' : 'lock()           '}: ${kb(held - objects)} KB per hold, ${kb(objects - before)} KB per lock object (N = ${n}, ${client.stats().watchdogHolds} renewed)`);
  if (withHandles) await Promise.all(handles.map((h) => h.release()));
  else await Promise.all(locks.map((lock) => lock.unlock()));
  await client.shutdown();
  await redis.quit();
}

await measure(false);
await measure(true);
