/**
 * What the unit tests of the lock protocol engine (src/lock/protocol/) share: owners made without entering
 * a context, an RLock seen through hooks that count or hold back its script runs (the scripts still run
 * in real Redis), gates to hold an attempt at a chosen point, lock clients behind a TCP proxy (lost
 * replies), and reads of a lock's hash.
 */
import { afterEach } from '@jest/globals';
import { currentContext, runInContext, type LockContext } from '../../../src/context.js';
import { createLockClient, type LockClient, type LockClientOptions } from '../../../src/index.js';
import type { RLock } from '../../../src/lock/lock.js';
import type { LockHooks } from '../../../src/lock/protocol/hooks.js';
import type { AcquireResult } from '../../../src/lock/scripts.js';
import type { RedisHarness } from '../../support/harness.js';
import type { Redis } from '../../support/helpers.js';
import { startProxy, type TcpProxy } from '../../support/tcp-proxy.js';

/** A new lock context (a Redisson thread), not entered: the engine takes its owner as an argument. */
export function newContext(): LockContext {
  return runInContext(() => currentContext()!);
}

/** A promise opened from outside: `open()` resolves it. */
export interface Gate {
  readonly opened: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * `lock` as the engine's hooks, with its script runs counted (`acquires`, `unlocks`: the arguments of
 * each run) and, while `holdAcquire` is set, each acquire script held back until that gate opens
 * (`acquireEntered` opens when one is held). Every other hook is the lock's own.
 */
export interface Spied extends LockHooks {
  readonly acquires: Array<{ owner: string; guard: string; held: string }>;
  readonly unlocks: Array<{ owner: string; latch: string; attempt: number; guard: string }>;
  holdAcquire: Gate | undefined;
  acquireEntered: Gate;
}

export function spy(lock: RLock): Spied {
  const hooks = Object.create(lock) as RLock & Spied;
  const acquires: Spied['acquires'] = [];
  const unlocks: Spied['unlocks'] = [];
  return Object.assign(hooks, {
    acquires,
    unlocks,
    holdAcquire: undefined,
    acquireEntered: gate(),
    async runAcquire(owner: string, lease: string, guard: string, held: string): Promise<AcquireResult> {
      acquires.push({ owner, guard, held });
      const hold = hooks.holdAcquire;
      if (hold) {
        hooks.acquireEntered.open();
        await hold.opened;
      }
      return lock.runAcquire.call(hooks, owner, lease, guard, held);
    },
    runUnlock(owner: string, latch: string, attempt: number, guard: string): Promise<number | null> {
      unlocks.push({ owner, latch, attempt, guard });
      return lock.runUnlock.call(hooks, owner, latch, attempt, guard);
    },
  });
}

/**
 * Starts `acquiring()` with its acquire script held back until `releasing()` was called (an unlock while
 * the attempt is in flight), then lets the script run: resolves to the acquisition's outcome once both
 * calls are over. The unlock scripts run meanwhile are counted in `hooks.unlocks` (see `spy`).
 */
export async function releaseInFlight<T>(hooks: Spied, acquiring: () => Promise<T>, releasing: () => Promise<void>): Promise<{ taken: T; unlocksWhileInFlight: number }> {
  const held = (hooks.holdAcquire = gate());
  const acquired = acquiring();
  await hooks.acquireEntered.opened;
  const released = releasing();
  const unlocksWhileInFlight = hooks.unlocks.length;
  hooks.holdAcquire = undefined;
  held.open();
  const taken = await acquired;
  await released;
  return { taken, unlocksWhileInFlight };
}

/** The hold counts in a lock hash by owner (every field but its `kind`). */
export async function holdCounts(redis: Redis, key: string): Promise<Record<string, string>> {
  const { kind: _kind, ...counts } = await redis.hGetAll(key);
  return counts;
}

/** Nil, in RESP2 and RESP3: the reply of a granted RLock acquire (what the proxy loses). */
export const NIL = ['$-1\r\n', '_\r\n'] as const;

/**
 * Registers the clean-up of lock clients behind TCP proxies to `env`'s server, and returns a maker of one
 * (its proxy, to lose replies with, and a lock client through it, both closed after the test).
 */
export function useProxied(env: RedisHarness): (options?: Omit<LockClientOptions, 'redis' | 'url'>) => Promise<{ proxy: TcpProxy; client: LockClient }> {
  const open: Array<{ proxy: TcpProxy; client: LockClient }> = [];
  afterEach(async () => {
    for (const { proxy, client } of open.splice(0)) {
      await client.shutdown();
      await proxy.close();
    }
  });
  return async (options = {}) => {
    const proxy = await startProxy('127.0.0.1', env.server.port);
    const made = { proxy, client: createLockClient({ url: `redis://127.0.0.1:${proxy.port}`, ...options }) };
    open.push(made);
    return made;
  };
}
