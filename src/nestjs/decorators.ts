import { AsyncLocalStorage } from 'node:async_hooks';
import { Inject } from '@nestjs/common';
import type { LockClient } from '../client.js';
import { InvalidArgumentError } from '../errors.js';
import type { RunExclusiveOptions } from '../job-lock/job-lock.js';
import { checkNameSource, lockName, type LockNameSource } from '../integrations/name-template.js';
import { checkLockedRunOptions, runLocked, type HeldLock, type LockedRunOptions } from '../integrations/run-locked.js';
import { LOCK_CLIENT } from './module.js';

/** The lock held by the innermost `@WithLock` or `@RunExclusive` method running (`currentLock()`). */
export interface CurrentLock extends Omit<HeldLock, 'kind'> {
  /** Which lock: a `LockKind` of `@WithLock`, or `'job'` for `@RunExclusive`'s job lock. */
  readonly kind: HeldLock['kind'] | 'job';
}

const current = new AsyncLocalStorage<CurrentLock>();

/**
 * The lock of the innermost `@WithLock` or `@RunExclusive` method the caller runs in (through every
 * `await`), or `undefined` outside any: its `name`, `kind`, `signal` (aborts when the lock is lost: pass it
 * on) and `token` (the fencing token, for `kind: 'fenced'`).
 */
export function currentLock(): CurrentLock | undefined {
  return current.getStore();
}

/** The property of a decorated class's instances where Nest injects the `LockClient` (property injection). */
const CLIENT = Symbol('relock:client');
const injected = new WeakSet<object>();

type Method = (...args: unknown[]) => unknown;

/**
 * Replaces the decorated method (TypeScript's `experimentalDecorators`, which Nest uses) with `wrap(original)`,
 * keeps its name and the metadata other decorators put on it (`@Post`, `@Cron`, … in any order), and has Nest
 * inject the `LockClient` into the class's instances.
 */
function decorate(decorator: string, wrap: (original: Method, name: string) => Method): MethodDecorator {
  return (target, key, descriptor) => {
    const original = descriptor?.value as unknown;
    if (typeof original !== 'function') throw new InvalidArgumentError(decorator, `decorates a method (with TypeScript's experimentalDecorators, as Nest needs); ${String(key)} is not one`);
    if (!injected.has(target)) {
      injected.add(target);
      Inject(LOCK_CLIENT)(target, CLIENT);
    }
    const wrapped = wrap(original as Method, String(key));
    Object.defineProperty(wrapped, 'name', { value: (original as Method).name });
    for (const metadataKey of Reflect.getMetadataKeys(original)) Reflect.defineMetadata(metadataKey, Reflect.getMetadata(metadataKey, original), wrapped);
    (descriptor as TypedPropertyDescriptor<unknown>).value = wrapped;
    return descriptor;
  };
}

function clientOf(instance: unknown, decorator: string, method: string): LockClient {
  const client = (instance as { [CLIENT]?: LockClient } | undefined)?.[CLIENT];
  if (client === undefined) throw new InvalidArgumentError(decorator, `${method}: no LockClient was injected: the class must be a provider or controller of an app that imports RelockModule`);
  return client;
}

/**
 * Runs the decorated method holding a lock, in a new lock context (`withLock`), and releases it when the
 * method's promise settles. `name`: a template read from the method's arguments (`'order:{{0.userId}}'`
 * is `args[0].userId`) or a function `(args) => string`. A decorated method called inside another on the
 * same lock (in the same call chain) reenters. `options`: `kind` (`lock`, `fair`, `read`, `write`,
 * `fenced`), `waitMs` (default: wait until free), `leaseMs` (default: the watchdog). The method sees the
 * lock through `currentLock()` (fencing token, loss signal). The decorated method returns a promise, and
 * rejects with `LockAcquireTimeoutError` when `waitMs` runs out (`LockConflictFilter` maps it to 409),
 * `InvalidArgumentError` for a name the template cannot build, the errors of `RLock.acquire`, or the
 * method's. Throws `InvalidArgumentError` at decoration for a bad `name` or option, or a non-method.
 * Redis: the keys of the lock kind (see `RLock`, `RFairLock`, `RReadWriteLock`, `RFencedLock`).
 */
export function WithLock(name: LockNameSource<unknown[]>, options?: LockedRunOptions): MethodDecorator {
  checkNameSource(name);
  checkLockedRunOptions(options);
  return decorate('WithLock', (original, method) =>
    function (this: unknown, ...args: unknown[]): Promise<unknown> {
      try {
        const client = clientOf(this, 'WithLock', method);
        return runLocked(client, lockName(name, args), options, (held) => current.run(held, () => original.apply(this, args)));
      } catch (error) {
        return Promise.reject(error);
      }
    },
  );
}

/**
 * For scheduled methods (`@Cron`, `@Interval` of `@nestjs/schedule`) on several instances: runs the method
 * only if no other instance runs, or just ran, the job `name` (`LockClient.runExclusive`, ShedLock's
 * `@SchedulerLock`): one attempt, never waiting. `options`: `atMostMs` (required: the lock's lease, or the
 * cap with `watchdog: true`), `atLeastMs` (the lock is kept this long from the start even when the method
 * finishes earlier, so that instances whose schedulers fire slightly apart do not run the same tick twice),
 * `watchdog`. The method sees the job's abort signal through `currentLock().signal`. The decorated method
 * resolves to the method's value when it ran, `undefined` when another instance held the job. Throws
 * `InvalidArgumentError` at decoration for a bad name, and from the call for a bad option (`atLeastMs`
 * above `atMostMs`, …). Redis: the job lock hash `keyPrefix + name`.
 */
export function RunExclusive(name: LockNameSource<unknown[]>, options: Omit<RunExclusiveOptions, 'signal'>): MethodDecorator {
  checkNameSource(name);
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'must be an object such as { atMostMs: 60000 }');
  return decorate('RunExclusive', (original, method) =>
    async function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const client = clientOf(this, 'RunExclusive', method);
      const job = lockName(name, args);
      const run = await client.runExclusive(job, (signal) => current.run({ name: job, kind: 'job', signal, token: undefined }, () => original.apply(this, args)), options);
      return run.ran ? run.value : undefined;
    },
  );
}
