import { Redlock as SesameRedlock, ExecutionError as SesameExecutionError } from '@sesamecare-oss/redlock';
import type { Redis } from 'ioredis';
import Redlock, { ExecutionError } from 'redlock';
import type { Adapter, AdapterOptions, Impl } from './types.js';

/** redlock has no default lease; the benchmark gives it relock's (`lockWatchdogTimeout`, 30 s). */
const DEFAULT_LEASE_MS = 30_000;

/** `redlock-tuned`: a retry every 2 ms (± 2 ms), and retries for 10 s, as long as redis-semaphore waits by default. */
const TUNED = { retryDelay: 2, retryJitter: 2, retryCount: 2500 };

/**
 * redlock 5.0.0-beta.2 or @sesamecare-oss/redlock on the shared ioredis 5 client, default settings (10
 * retries every 200 ms ± 100 ms jitter); `redlock-tuned` with `TUNED`. Mutexes use `acquire` / `release` (no extension); `hold` uses
 * `using`, which extends the lock 500 ms before it expires.
 */
export function redlockAdapter(impl: Extract<Impl, 'redlock' | 'redlock-tuned' | 'sesamecare-redlock'>, redis: Redis, options: AdapterOptions): Adapter {
  const redlock = impl === 'sesamecare-redlock' ? new SesameRedlock([redis]) : new Redlock([redis], impl === 'redlock-tuned' ? TUNED : {});
  const gaveUp = (error: unknown): boolean => error instanceof ExecutionError || error instanceof SesameExecutionError;
  const lease = options.leaseMs ?? DEFAULT_LEASE_MS;
  return {
    impl,
    mutex(name) {
      let held: { release(): Promise<unknown> } | undefined;
      return {
        acquire: async () => {
          try {
            held = await redlock.acquire([name], lease);
            return true;
          } catch (error) {
            if (gaveUp(error)) return false;
            throw error;
          }
        },
        release: async () => {
          const lock = held;
          held = undefined;
          await lock?.release();
        },
      };
    },
    async hold(name) {
      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      let acquired!: () => void;
      const started = new Promise<void>((resolve) => (acquired = resolve));
      const using = redlock.using([name], lease, async (signal) => {
        if (options.onLost) signal.addEventListener('abort', options.onLost);
        acquired();
        await finished;
      });
      await Promise.race([started, using]);
      return async () => {
        finish();
        await using;
      };
    },
    close: async () => {}, // not redlock.quit(): the shared ioredis client is closed by openAdapters
  };
}
