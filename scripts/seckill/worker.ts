/**
 * One service instance of the flash-sale demo: its own relock client and SQLite connection. It gets its
 * share of the requests from the orchestrator (scripts/seckill.ts) over IPC and answers with one result
 * per request.
 */
import Database from 'better-sqlite3';
import { setTimeout as delay } from 'node:timers/promises';
import { createClient } from 'redis';
import { createLockClient } from '../../src/index.js';

export interface WorkerTask {
  url: string;
  dbFile: string;
  voucher: string;
  stockKey: string;
  useLock: boolean;
  concurrency: number;
  users: number[];
}

export interface RequestResult {
  user: number;
  outcome: 'ordered' | 'already-ordered' | 'sold-out' | 'rejected-by-lock';
  waitMs: number;
  holdMs: number;
}

const TAKE_STOCK = `local stock = tonumber(redis.call('get', KEYS[1]) or '0')
if stock > 0 then return redis.call('decr', KEYS[1]) end
return -1`;

async function serve(task: WorkerTask): Promise<RequestResult[]> {
  const redis = createClient({ url: task.url });
  redis.on('error', () => {});
  await redis.connect();
  const locks = createLockClient({ redis });
  const db = new Database(task.dbFile);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  const findOrder = db.prepare('SELECT 1 FROM orders WHERE user_id = ? AND voucher_id = ?');
  const insertOrder = db.prepare('INSERT INTO orders (user_id, voucher_id, created_at) VALUES (?, ?, ?)');

  /** The business logic: one order per user, while stock lasts. */
  const placeOrder = async (user: number): Promise<RequestResult['outcome']> => {
    if (findOrder.get(user, task.voucher)) return 'already-ordered';
    await delay(1 + Math.random() * 4); // a network hop between the check and the insert
    const left = Number(await redis.eval(TAKE_STOCK, { keys: [task.stockKey] }));
    if (left < 0) return 'sold-out';
    insertOrder.run(user, task.voucher, Date.now());
    return 'ordered';
  };

  const handle = async (user: number): Promise<RequestResult> => {
    if (!task.useLock) return { user, outcome: await placeOrder(user), waitMs: 0, holdMs: 0 };
    const lock = locks.getLock(`lock:seckill:{${task.voucher}}:${user}`);
    const started = performance.now();
    if (!(await lock.tryLock(1, 5, 'seconds'))) return { user, outcome: 'rejected-by-lock', waitMs: performance.now() - started, holdMs: 0 };
    const acquired = performance.now();
    try {
      return { user, outcome: await placeOrder(user), waitMs: acquired - started, holdMs: performance.now() - acquired };
    } finally {
      await lock.unlock();
    }
  };

  const results: RequestResult[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: task.concurrency }, async () => {
      while (next < task.users.length) results.push(await handle(task.users[next++]));
    }),
  );
  await locks.shutdown();
  await redis.close();
  db.close();
  return results;
}

process.once('message', (task: WorkerTask) => {
  serve(task).then(
    (results) => process.send!({ results }, () => process.exit(0)),
    (error: unknown) => {
      process.send!({ error: String((error as Error)?.stack ?? error) }, () => process.exit(1));
    },
  );
});
