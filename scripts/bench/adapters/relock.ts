import type * as relock from '../../../src/index.js';
import type { LockClient } from '../../../src/index.js';
import type { Adapter, AdapterOptions, Impl, Mutex } from './types.js';

/**
 * The Redisson semaphore API (`RSemaphore`) that relock's `getSemaphore` follows. It is being built on
 * another branch: the adapter uses it when the client has it and reports it missing otherwise.
 */
interface RSemaphoreApi {
  trySetPermits(permits: number): Promise<boolean>;
  acquire(): Promise<void>;
  release(): Promise<void>;
}
type WithSemaphore = LockClient & { getSemaphore?: (name: string) => RSemaphoreApi };

/**
 * relock on the given client (node-redis for `relock` and `relock-base`, the shared ioredis one for
 * `relock-ioredis`, a GlideClient for `relock-glide`), defaults except `lockWatchdogTimeout` when `leaseMs` is set. Mutexes use `lock()` /
 * `unlock()` (watchdog mode; `hold` releases by `forceUnlock`, see there), one RLock object (one owner) per task (`non-reentrant`: one
 * `getNonReentrantLock` object, the same calls). `lib`: the relock module to use
 * (the built package by default, see `relockLibrary`; `relock-base`: another source tree's, see `openAdapters`).
 */
export function relockAdapter(redis: object, options: AdapterOptions, impl: Extract<Impl, 'relock' | 'non-reentrant' | 'relock-base' | 'relock-ioredis' | 'relock-glide'> = 'relock', lib: Pick<typeof relock, 'createLockClient'>): Adapter {
  const client: WithSemaphore = lib.createLockClient({ redis, ...(options.leaseMs === undefined ? {} : { lockWatchdogTimeout: options.leaseMs }) });
  if (options.onLost) client.on('lockLost', options.onLost);
  const getSemaphore = client.getSemaphore?.bind(client);
  const getLock = impl === 'non-reentrant' ? (name: string) => client.getNonReentrantLock(name) : (name: string) => client.getLock(name);
  return {
    impl,
    mutex(name) {
      const lock = getLock(name);
      return {
        acquire: async () => {
          await lock.lock();
          return true;
        },
        release: () => lock.unlock(),
      };
    },
    async hold(name) {
      const lock = getLock(name);
      await lock.lock();
      // The caller releases from another task than the one that locked (scenario 8's 256 taking tasks,
      // released together after the heap was measured), and relock refuses a contextless unlock() there
      // (OwnerUnknownError, issue 27): cleanup by forceUnlock, which deletes the lock and stops its renewals.
      return async () => void (await lock.forceUnlock());
    },
    async handleHold(name) {
      const handle = await getLock(name).acquire();
      return () => handle.release();
    },
    ...(getSemaphore
      ? {
          semaphore(name: string, permits: number) {
            const semaphore = getSemaphore(name);
            return {
              ready: async () => void (await semaphore.trySetPermits(permits)),
              task: (): Mutex => ({
                acquire: async () => {
                  await semaphore.acquire();
                  return true;
                },
                release: () => semaphore.release(),
              }),
            };
          },
        }
      : { semaphoreMissing: 'not available in this build (LockClient.getSemaphore does not exist yet)' }),
    renewalCalls: () => client.stats().renewalCalls,
    close: () => client.shutdown(),
  };
}
