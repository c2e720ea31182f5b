import type { Redis } from 'ioredis';
import { Mutex as RsMutex, Semaphore as RsSemaphore, TimeoutError } from 'redis-semaphore';
import type { Adapter, AdapterOptions, Mutex } from './types.js';

/** One redis-semaphore lock (Mutex or Semaphore share this API). */
interface RsLock {
  acquire(): Promise<void>;
  release(): Promise<void>;
}

/**
 * redis-semaphore 5 on the shared ioredis 5 client, default options (lockTimeout 10 s, acquireTimeout 10 s,
 * retry every 10 ms, refresh every 8 s), one Mutex or Semaphore object per task. `onLockLost` is set
 * only to count losses: its default throws an unhandled error.
 */
export function redisSemaphoreAdapter(redis: Redis, options: AdapterOptions): Adapter {
  const lockOptions = {
    ...(options.leaseMs === undefined ? {} : { lockTimeout: options.leaseMs }),
    onLockLost: () => options.onLost?.(),
  };
  const task = (lock: RsLock): Mutex => ({
    acquire: async () => {
      try {
        await lock.acquire();
        return true;
      } catch (error) {
        if (error instanceof TimeoutError) return false;
        throw error;
      }
    },
    release: () => lock.release(),
  });
  return {
    impl: 'redis-semaphore',
    mutex: (name) => task(new RsMutex(redis, name, lockOptions)),
    async hold(name) {
      const mutex = new RsMutex(redis, name, lockOptions);
      await mutex.acquire();
      return () => mutex.release();
    },
    semaphore: (name, permits) => ({
      ready: async () => {},
      task: () => task(new RsSemaphore(redis, name, permits, lockOptions)),
    }),
    close: async () => {}, // the shared ioredis client is closed by openAdapters
  };
}
