/**
 * The flash-sale demo (`npm run demo`): one voucher with stock 100, 1000 users, 200 concurrent requests
 * spread over two service instances (separate Node processes, each with its own relock client), users
 * clicking more than once. Each request takes `lock:seckill:{voucher}:{user}` with
 * `tryLock(1, 5, 'seconds')`, checks for an existing order in SQLite, takes one unit of stock in Redis and
 * inserts the order. `--no-lock` runs the same without the lock; `--json` prints one JSON summary line.
 * Uses REDIS_URL, or starts (and stops) a local redis-server.
 */
import Database from 'better-sqlite3';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { startRedis } from '../test/support/redis.js';
import type { RequestResult, WorkerTask } from './seckill/worker.js';

const args = new Set(process.argv.slice(2));
const useLock = !args.has('--no-lock');
const json = args.has('--json');
const STOCK = 100;
const USERS = 1000;
const CONCURRENCY = 200;
const INSTANCES = 2;

const server = await startRedis();
const dir = mkdtempSync(join(tmpdir(), 'relock-seckill-'));
const dbFile = join(dir, 'orders.db');
const db = new Database(dbFile);
db.pragma('journal_mode = WAL');
db.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, voucher_id TEXT NOT NULL, created_at INTEGER NOT NULL)');

const voucher = `v${Date.now().toString(36)}`;
const stockKey = `seckill:{${voucher}}:stock`;
const redis = createClient({ url: server.url });
redis.on('error', () => {});
await redis.connect();
await redis.set(stockKey, String(STOCK));

// Every user clicks once; 40% click again and 10% a third time, the repeats close to the first click.
const requests: number[] = [];
for (let user = 1; user <= USERS; user++) {
  const clicks = Math.random() < 0.1 ? 3 : Math.random() < 0.4 ? 2 : 1;
  for (let c = 0; c < clicks; c++) requests.push(user);
}
for (let i = requests.length - 1; i > 0; i--) {
  const j = Math.max(0, i - Math.floor(Math.random() * 8)); // shuffle locally: repeats stay near each other
  [requests[i], requests[j]] = [requests[j], requests[i]];
}

const here = dirname(fileURLToPath(import.meta.url));
const started = performance.now();
const shares = await Promise.all(
  Array.from({ length: INSTANCES }, (_, i) =>
    new Promise<RequestResult[]>((resolve, reject) => {
      const child = fork(join(here, 'seckill', 'worker.ts'), { execArgv: ['--import', 'tsx'] });
      const task: WorkerTask = {
        url: server.url, dbFile, voucher, stockKey, useLock, concurrency: CONCURRENCY / INSTANCES,
        users: requests.filter((_, r) => r % INSTANCES === i),
      };
      child.once('message', (m: { results?: RequestResult[]; error?: string }) => (m.results ? resolve(m.results) : reject(new Error(m.error))));
      child.once('exit', (code) => code !== 0 && reject(new Error(`instance ${i} exited with ${code}`)));
      child.send(task);
    }),
  ),
);
const elapsedMs = performance.now() - started;
const results = shares.flat();

const stockLeft = Number(await redis.get(stockKey));
const orders = (db.prepare('SELECT COUNT(*) AS n FROM orders').get() as { n: number }).n;
const duplicateOrders = (db.prepare('SELECT COALESCE(SUM(n - 1), 0) AS d FROM (SELECT COUNT(*) AS n FROM orders GROUP BY user_id, voucher_id HAVING n > 1)').get() as { d: number }).d;
const summary = {
  lock: useLock,
  instances: INSTANCES,
  requests: results.length,
  users: USERS,
  stock: STOCK,
  stockLeft,
  orders,
  duplicateOrders,
  oversold: Math.max(0, orders - STOCK, -stockLeft),
  rejectedByLock: results.filter((r) => r.outcome === 'rejected-by-lock').length,
  alreadyOrdered: results.filter((r) => r.outcome === 'already-ordered').length,
  soldOut: results.filter((r) => r.outcome === 'sold-out').length,
  lockWaitP50Ms: percentile(results, 'waitMs', 0.5),
  lockWaitP99Ms: percentile(results, 'waitMs', 0.99),
  lockHoldP50Ms: percentile(results, 'holdMs', 0.5),
  lockHoldP99Ms: percentile(results, 'holdMs', 0.99),
  elapsedMs: Math.round(elapsedMs),
};

await redis.del(stockKey);
await redis.close();
db.close();
rmSync(dir, { recursive: true, force: true });
await server.stop();

if (json) {
  console.log(JSON.stringify(summary));
} else {
  console.log(`Flash sale ${useLock ? 'WITH' : 'WITHOUT'} relock: ${summary.requests} requests from ${USERS} users, ${CONCURRENCY} concurrent, ${INSTANCES} service instances, stock ${STOCK}\n`);
  console.table({
    'stock left': summary.stockLeft,
    orders: summary.orders,
    'duplicate (user, voucher) orders': summary.duplicateOrders,
    oversold: summary.oversold,
    'turned away by the lock': summary.rejectedByLock,
    'already ordered (2nd click)': summary.alreadyOrdered,
    'sold out': summary.soldOut,
    'lock wait p50 / p99 (ms)': `${summary.lockWaitP50Ms} / ${summary.lockWaitP99Ms}`,
    'lock hold p50 / p99 (ms)': `${summary.lockHoldP50Ms} / ${summary.lockHoldP99Ms}`,
    'elapsed (ms)': summary.elapsedMs,
  });
  const ok = summary.duplicateOrders === 0 && summary.oversold === 0;
  console.log(ok ? 'No duplicate order, no oversell.' : 'FAILURE: duplicate orders or oversell — this is what the lock prevents.');
}

function percentile(rows: RequestResult[], field: 'waitMs' | 'holdMs', q: number): number {
  const values = rows.filter((r) => r.outcome !== 'rejected-by-lock' || field === 'waitMs').map((r) => r[field]).sort((a, b) => a - b);
  if (values.length === 0) return 0;
  return Math.round(values[Math.min(values.length - 1, Math.floor(q * values.length))] * 100) / 100;
}
