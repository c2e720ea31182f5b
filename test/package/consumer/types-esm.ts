// Type-checked against the built package (not run): an ES module consumer, as in the README.
import { createClient } from 'redis';
import {
  createLockClient,
  LockAcquireTimeoutError,
  RelockError,
  runInContext,
  type LockClientOptions,
  type LockHandle,
  type LockLostEvent,
  type PermitHandle,
  type RLock,
  type TimeUnit,
} from 'relock';

const redis = await createClient({ url: 'redis://localhost:6379' }).on('error', console.error).connect();
const options: LockClientOptions = { redis, lockWatchdogTimeout: 10_000, retry: { retries: 2 } };
const locks = createLockClient(options);

const lock: RLock = locks.getLock('order:{42}');
const acquired: boolean = await lock.tryLock(1, 5, 'seconds');
// @ts-expect-error a time needs its unit
await lock.tryLock(1, 5);
if (acquired) await lock.unlock();

const unit: TimeUnit = 's';
{
  await using held: LockHandle = await lock.acquire({ waitTime: 2, unit });
  const signal: AbortSignal = held.signal;
  const lease: number | undefined = held.leaseTime;
  void [signal, lease];
}

const token: bigint | undefined = await locks.getFencedLock('account:{7}').tryLockAndGetToken(1, 5, 'seconds');
const total: number = await locks.withLock('report', async (signal: AbortSignal) => (signal.aborted ? 0 : 1), { waitTime: 1, unit: 'minutes' });
const nested: Promise<number> = runInContext(async () => total);

const quota = locks.getPermitExpirableSemaphore('api:{provider}');
const permit: PermitHandle = await quota.acquire({ leaseTime: 30, unit: 'seconds' });
const id: string = permit.id;
await permit.release();

locks.on('lockLost', (event: LockLostEvent) => {
  const reason: 'expired' | 'renewal-failed' | 'renewal-late' | 'lease-ended' | 'shutdown' = event.reason;
  void reason;
});

try {
  await lock.acquire({ waitMs: 0 });
} catch (error) {
  if (error instanceof LockAcquireTimeoutError) {
    const waited: number = error.waitTimeMs;
    const code: string = error.code;
    void [waited, code];
  } else if (error instanceof RelockError) {
    throw error;
  }
}

void [token, nested, id];
await locks.shutdown();
await redis.close();
