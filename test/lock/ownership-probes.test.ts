/**
 * Breaker probes of contextless ownership (branch `own`): ordinary user code with a module-scope lock
 * object on two LockClients ("two instances"), checking that no two holders are inside at once, no hold
 * is left held, no hold is released by a task that did not own it, and no typed error is thrown in a
 * correct program. Probes that expose a defect are `test.failing` with the defect stated above them.
 */
import { describe, expect, it, test } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { IllegalMonitorStateError, ReentryNeedsContextError, type LockClient, type RLock } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { atMost, connect, lockClient, sleep, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis();

/** Two instances (separate connections) with a module-scope lock object each, on one name, and a section counter. */
async function instances(): Promise<{ clients: LockClient[]; locks: RLock[]; name: string; section: { enter: (ms?: number) => Promise<void>; during: (body: () => Promise<void>) => Promise<void>; most: () => number } }> {
  const other = await connect(env.server.url);
  env.closeBeforeStop(() => other.close());
  const clients = [lockClient(env.redis), lockClient(other)];
  const name = uniqueName('probe');
  let inside = 0;
  let most = 0;
  const during = async (body: () => Promise<void>): Promise<void> => {
    most = Math.max(most, ++inside);
    try {
      await body();
    } finally {
      inside--;
    }
  };
  return {
    clients,
    locks: clients.map((c) => c.getLock(name)),
    name,
    section: { enter: (ms = 2) => during(() => sleep(ms)), during, most: () => most },
  };
}

/** Owner fields of the lock hash (the hash also has a `kind` field). */
const owners = async (name: string): Promise<number> => Object.keys(await env.redis.hGetAll(name)).filter((f) => f !== 'kind').length;

/** Resolves once the lock's hash exists, i.e. some owner holds it (polled, 5 s deadline). */
const held = async (name: string): Promise<void> => {
  await waitUntil(async () => (await env.redis.exists(name)) === 1, 5000, 2, `a hold of ${name}`);
};

/** A promise with its resolve function. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const freeKey = async (name: string): Promise<boolean> => (await env.redis.exists(name)) === 0;

describe('breaker probes: contextless ownership', () => {
  // DEFECT (false refusal): the note work() leaves before its first await reaches the synchronous
  // caller, hence the sibling started after it. Once the first work() holds, the sibling's work() gets
  // ReentryNeedsContextError instead of waiting its turn. Every run once the sibling locks after the
  // first one's grant (3/3); with a 5 ms head start it sometimes passes (the grant not in yet).
  test.failing('Promise.all([work(), (async () => { await sleep(); await work(); })()]): both enter, one at a time', async () => {
    const { locks, section } = await instances();
    const lock = locks[0];
    const work = async (): Promise<void> => {
      await lock.lock();
      try {
        await section.enter(30);
      } finally {
        await lock.unlock();
      }
    };
    const later = async (): Promise<void> => {
      await held(lock.name);
      await work();
    };
    await Promise.all([work(), later()]);
    expect(section.most()).toBe(1);
  });

  // Was a safety defect (two holders; a hold released by a task that did not own it): the same leak with the
  // common `try { await lock.lock(); … } finally { await lock.unlock(); }`. The sibling's lock() is refused
  // (ReentryNeedsContextError: relock cannot tell it from a re-entry) and, before the fix, left no note, so
  // its finally's unlock() found the first work()'s note and released its hold (most = 2, 4/4 runs). The
  // refusal is now noted: the sibling's unlock() throws IllegalMonitorStateError and the first keeps its hold.
  it('sibling with lock() inside try/finally: never two holders, and the refused sibling releases nothing', async () => {
    const { locks, section, name } = await instances();
    const lock = locks[0];
    const errors: string[] = [];
    const work = async (inside: () => Promise<void>): Promise<void> => {
      try {
        await lock.lock();
        await section.during(inside);
      } catch (e) {
        errors.push((e as Error).name);
      } finally {
        await lock.unlock().catch((e: unknown) => errors.push(`unlock:${(e as Error).name}`));
      }
    };
    const others = deferred();
    // The first holds until the sibling and the intruder are done (a deadline keeps a defect from hanging it).
    const first = work(() => atMost(others.promise, 5000));
    // The sibling locks once the first holds (its note is the one relock must not take for a re-entry).
    const second = (async () => {
      await held(name);
      await work(() => sleep(5));
    })();
    // The other instance tries to enter while the first is inside.
    const intruder = (async () => {
      await held(name);
      if (await locks[1].tryLock(200, 'ms')) {
        try {
          await section.enter(5);
        } finally {
          await locks[1].unlock();
        }
      }
    })();
    void Promise.allSettled([second, intruder]).then(() => others.resolve());
    await Promise.all([first, second, intruder]);
    expect({ most: section.most(), errors }).toEqual({ most: 1, errors: ['ReentryNeedsContextError', 'unlock:IllegalMonitorStateError'] });
    expect(await freeKey(name)).toBe(true);
  });

  // Was a safety defect (two holders, a hold released by a task that did not own it). Two listeners of one
  // event: listener 1 runs `try { await lock.lock(); … } finally { await lock.unlock(); }`, listener 2
  // awaits something, then does the same. Listener 1's note reaches listener 2 (emit() runs both in one
  // synchronous run), so listener 2's lock() is refused with ReentryNeedsContextError; before the fix its
  // finally's unlock() released listener 1's hold (most = 2, 3/3 runs). Now it throws IllegalMonitorStateError.
  it('EventEmitter: listener 1 try { lock() } finally { unlock() } holds; listener 2 awaits, then the same: never two holders, nobody releases another task', async () => {
    const { locks, section, name } = await instances();
    const lock = locks[0];
    const emitter = new EventEmitter();
    const errors: string[] = [];
    const done: Array<Promise<void>> = [];
    // Listener 1 must reach lock() in emit()'s synchronous run (no await before it): that is what leaks its note.
    const work = async (before: (() => Promise<void>) | undefined, inside: () => Promise<void>): Promise<void> => {
      if (before) await before();
      try {
        await lock.lock();
        await section.during(inside);
      } catch (e) {
        errors.push((e as Error).name);
      } finally {
        await lock.unlock().catch((e: unknown) => errors.push(`unlock:${(e as Error).name}`));
      }
    };
    const others = deferred();
    // Listener 1 holds until listener 2 and the intruder are done (a deadline keeps a defect from hanging it);
    // listener 2 awaits listener 1's hold, then locks.
    emitter.on('job', () => done.push(work(undefined, () => atMost(others.promise, 5000))));
    emitter.on('job', () => done.push(work(() => held(name), () => sleep(5))));
    emitter.emit('job');
    // The other instance tries to enter while listener 1 is inside.
    const intruder = (async () => {
      await held(name);
      if (await locks[1].tryLock(250, 'ms')) {
        try {
          await section.enter(5);
        } finally {
          await locks[1].unlock();
        }
      }
    })();
    void Promise.allSettled([done[1], intruder]).then(() => others.resolve());
    await Promise.all([...done, intruder]);
    expect({ most: section.most(), errors }).toEqual({ most: 1, errors: ['ReentryNeedsContextError', 'unlock:IllegalMonitorStateError'] });
    expect(await freeKey(name)).toBe(true);
  });

  it('Promise.allSettled siblings that lock at once, two instances, 30 rounds: one holder at a time, nothing left', async () => {
    const { locks, section, name } = await instances();
    for (let round = 0; round < 30; round++) {
      const results = await Promise.allSettled(
        [0, 1, 2, 3].map(async (i) => {
          const lock = locks[i % 2];
          await lock.lock();
          try {
            await section.enter(1);
          } finally {
            await lock.unlock();
          }
        }),
      );
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    }
    expect(section.most()).toBe(1);
    expect(await freeKey(name)).toBe(true);
  });

  it('Promise.race of tryLock siblings: the losers are refused or wait, never two inside, nothing left', async () => {
    const { locks, section, name } = await instances();
    const tasks = [0, 1, 2, 3].map(async (i) => {
      const lock = locks[i % 2];
      if (!(await lock.tryLock(2, 's'))) return 'no';
      try {
        await section.enter(5);
      } finally {
        await lock.unlock();
      }
      return 'ok';
    });
    await Promise.race(tasks);
    expect(await Promise.all(tasks)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(section.most()).toBe(1);
    expect(await freeKey(name)).toBe(true);
  });

  // DEFECT (false refusal AND a hold left renewed forever): an async generator that locks, yields, and
  // unlocks in its finally when the consumer's `for await` resumes it: the unlock throws
  // IllegalMonitorStateError (the resumed generator runs in the consumer's context, which has no note of
  // the generator's hold... or another one), and the hold stays in Redis, renewed by the watchdog until
  // shutdown. Every run (3/3). A generator closed by `break` (return()) does release: see the next probe.
  test.failing('async generator: lock, yield, unlock after the consumer resumes it (for await)', async () => {
    const { locks, name } = await instances();
    const lock = locks[0];
    async function* batches(): AsyncGenerator<number> {
      for (let i = 0; i < 3; i++) {
        await lock.lock();
        try {
          yield i;
        } finally {
          await lock.unlock();
        }
      }
    }
    const seen: number[] = [];
    const outcome = await (async () => {
      for await (const b of batches()) {
        seen.push(b);
        expect(await env.redis.exists(name)).toBe(1);
        await sleep(1);
      }
      return 'ok';
    })().catch((e: unknown) => (e as Error).name);
    // Whatever the unlock said, the hold must not stay behind (renewed by the watchdog forever).
    const left = await env.redis.exists(name);
    expect({ outcome, seen, left }).toEqual({ outcome: 'ok', seen: [0, 1, 2], left: 0 });
  });

  it('async generator consumed with an early break (return()): the hold taken in the generator is released', async () => {
    const { locks, name } = await instances();
    const lock = locks[0];
    async function* rows(): AsyncGenerator<number> {
      await lock.lock();
      try {
        for (let i = 0; ; i++) yield i;
      } finally {
        await lock.unlock();
      }
    }
    for await (const r of rows()) if (r === 2) break;
    expect(await freeKey(name)).toBe(true);
  });

  it('lock() then tryLock(0) in the same task: ReentryNeedsContextError; the hold is kept, and unlock() is refused too (the refusal cannot tell the task from a sibling)', async () => {
    const { locks, name } = await instances();
    const lock = locks[0];
    await lock.lock();
    await expect(lock.tryLock(0, 'ms')).rejects.toBeInstanceOf(ReentryNeedsContextError);
    expect(await env.redis.exists(name)).toBe(1);
    await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    expect(await env.redis.exists(name)).toBe(1);
    await lock.forceUnlock();
    expect(await freeKey(name)).toBe(true);
  });

  it('sequential lock/unlock in a loop in one task, alternating with the other instance: no refusal', async () => {
    const { locks, section, name } = await instances();
    const run = async (lock: RLock): Promise<void> => {
      for (let i = 0; i < 20; i++) {
        await lock.lock();
        try {
          await section.enter(1);
        } finally {
          await lock.unlock();
        }
      }
    };
    await Promise.all([run(locks[0]), run(locks[1])]);
    expect(section.most()).toBe(1);
    expect(await freeKey(name)).toBe(true);
  });

  it('unlock racing its own acquisition while the other instance holds: the unlock waits and releases; the other is untouched', async () => {
    const { locks, name } = await instances();
    await locks[1].lock();
    const p = locks[0].lock();
    const u = locks[0].unlock();
    await sleep(20);
    expect(await owners(name)).toBe(1);
    await locks[1].unlock();
    await p;
    await u;
    expect(await freeKey(name)).toBe(true);
  });

  it('abort at random times, 40 acquisitions against a holder on the other instance: no hold left, then unlock() throws IllegalMonitorStateError', async () => {
    const { locks, name } = await instances();
    await locks[1].lock();
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const signal = AbortSignal.timeout(1 + ((i * 7) % 40));
        const got = await locks[0].acquire({ signal, waitMs: 2000 }).then(
          (h) => h,
          () => undefined,
        );
        if (got) await got.release();
        const err = await locks[0].unlock().then(() => 'released', (e: unknown) => (e as Error).name);
        return err;
      }),
    );
    expect(new Set(outcomes).has('released')).toBe(false);
    await locks[1].unlock();
    await waitUntil(() => freeKey(name), 3000);
  });

  it('aborted lock() then unlock() in the same task: IllegalMonitorStateError, the other holder kept', async () => {
    const { locks, name } = await instances();
    await locks[1].lock();
    for (let i = 0; i < 10; i++) {
      const controller = new AbortController();
      const p = locks[0].lock({ signal: controller.signal } as never).catch((e: unknown) => (e as Error).name);
      setTimeout(() => controller.abort(), i * 3);
      await p;
      await expect(locks[0].unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
      expect(await owners(name)).toBe(1);
    }
    await locks[1].unlock();
    expect(await freeKey(name)).toBe(true);
  });

  it('EventEmitter: two listeners on one event, each locks at once and unlocks: both enter, one at a time', async () => {
    const { locks, section, name } = await instances();
    const emitter = new EventEmitter();
    const done: Array<Promise<string>> = [];
    for (const lock of [locks[0], locks[0], locks[1]])
      emitter.on('job', () =>
        done.push(
          (async () => {
            await lock.lock();
            try {
              await section.enter(10);
            } finally {
              await lock.unlock();
            }
            return 'ok';
          })().catch((e: unknown) => (e as Error).name),
        ),
      );
    emitter.emit('job');
    emitter.emit('job');
    expect(await Promise.all(done)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'ok']);
    expect(section.most()).toBe(1);
    expect(await freeKey(name)).toBe(true);
  });

  // DEFECT (false refusal): the same leak without try/finally. Listener 1 locks at once; listener 2 of
  // the same event awaits something, then locks while listener 1 holds: ReentryNeedsContextError, though
  // listener 2 is another task that should wait its turn. Every run. (Promise.all siblings do not leak.)
  test.failing('EventEmitter: listener 1 locks at once, listener 2 awaits then locks (records the outcome)', async () => {
    const { locks, section, name } = await instances();
    const emitter = new EventEmitter();
    const done: Array<Promise<string>> = [];
    const work = async (pre: boolean): Promise<string> => {
      if (pre) await held(name);
      await locks[0].lock();
      try {
        await section.enter(pre ? 5 : 300); // listener 1 still holds when listener 2 locks, however slow the machine
      } finally {
        await locks[0].unlock();
      }
      return 'ok';
    };
    emitter.on('job', () => done.push(work(false).catch((e: unknown) => (e as Error).name)));
    emitter.on('job', () => done.push(work(true).catch((e: unknown) => (e as Error).name)));
    emitter.emit('job');
    const results = await Promise.all(done);
    expect(section.most()).toBe(1);
    // A correct program: both should enter. Recorded in the report whatever it is.
    expect(results).toEqual(['ok', 'ok']);
  });

  // FALSE REFUSAL (follows the documented "generic-pool" row, but a correct program): a task that holds
  // schedules background jobs (setImmediate, nextTick, queueMicrotask) that lock the same object; they
  // would wait until the holder unlocks, but all three get ReentryNeedsContextError. Every run.
  test.failing('setImmediate / nextTick / queueMicrotask callbacks scheduled by a task that holds: each waits its turn (records the outcome)', async () => {
    const { locks, section, name } = await instances();
    const lock = locks[0];
    const results: Array<Promise<string>> = [];
    const job = async (): Promise<string> => {
      await lock.lock();
      try {
        await section.enter(2);
      } finally {
        await lock.unlock();
      }
      return 'ok';
    };
    await lock.lock();
    setImmediate(() => results.push(job().catch((e: unknown) => (e as Error).name)));
    process.nextTick(() => results.push(job().catch((e: unknown) => (e as Error).name)));
    queueMicrotask(() => results.push(job().catch((e: unknown) => (e as Error).name)));
    await sleep(20);
    await lock.unlock();
    await waitUntil(() => results.length === 3);
    expect(await Promise.all(results)).toEqual(['ok', 'ok', 'ok']);
    expect(await freeKey(name)).toBe(true);
  });

  it('setInterval ticks with a setTimeout nested in each tick: lock in the tick, unlock in the nested timer', async () => {
    const { locks, name } = await instances();
    const lock = locks[0];
    const outcomes: string[] = [];
    await new Promise<void>((resolve) => {
      let ticks = 0;
      const t = setInterval(() => {
        if (++ticks === 5) clearInterval(t);
        void (async () => {
          await lock.lock();
          setTimeout(() => {
            lock.unlock().then(
              () => outcomes.push('ok'),
              (e: unknown) => outcomes.push((e as Error).name),
            ).finally(() => outcomes.length === 5 && resolve());
          }, 2);
        })().catch((e: unknown) => {
          outcomes.push(`lock:${(e as Error).name}`);
          if (outcomes.length === 5) resolve();
        });
      }, 5);
    });
    // The nested timer is made by the task that locked: it should release its own hold.
    expect(outcomes.sort()).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    expect(await freeKey(name)).toBe(true);
  });
});
