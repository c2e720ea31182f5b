/**
 * A project that installed relock and ioredis, and no `redis`: a small flash sale through relock on the
 * project's own ioredis client (10 items, 30 buyers, each purchase under one lock), then a lock through
 * `createLockClient({ url })`, which must pick ioredis. Prints what it saw as one JSON line.
 */
import { Redis } from 'ioredis';
import { createLockClient } from 'relock';

const { url, name } = JSON.parse(process.argv[2]);
const redisInstalled = await import('redis').then(() => true, () => false);
const io = new Redis(url);
const locks = createLockClient({ redis: io });
const stock = `${name}:stock`;
await io.set(stock, '10');
let sold = 0;
let oversold = false;
await Promise.all(
  Array.from({ length: 30 }, () =>
    locks.withLock(`${name}:sale`, async () => {
      const left = Number(await io.get(stock));
      if (left <= 0) return;
      if (left > 10) oversold = true;
      await io.set(stock, String(left - 1));
      sold++;
    }, { waitMs: 10_000 }),
  ),
);
const stockLeft = Number(await io.get(stock));
await io.del(stock);
await locks.shutdown();
const ioredisOpen = io.status === 'ready';
await io.quit();

const byUrl = createLockClient({ url });
const viaUrl = await byUrl.getLock(`${name}:url`).tryLock(1, 5, 'seconds');
await byUrl.getLock(`${name}:url`).unlock();
await byUrl.shutdown();
console.log(JSON.stringify({ redisInstalled, sold, stockLeft, oversold, ioredisOpen, viaUrl }));
