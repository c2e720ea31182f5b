/**
 * A benchmark child process (see children.ts). `waiters`: `tasks` loops that take the lock `key`, hold
 * it `holdMs` and release it, recording when each hold began and when its release began; on `stall`
 * the next hold here lasts `ms` instead. `watchdog`: measures its event-loop delay idle for 1 s, takes
 * `count` holds that the library renews by itself, then measures renewals, event-loop delay and memory
 * over `windowMs`. `memory`: bytes allocated per uncontended cycle and heap per held lock (memory-worker.ts).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createClient } from 'redis';
import { openAdapters } from './adapters/index.js';
import { REQUEST_COMMANDS, type Adapter, type Release } from './adapters/types.js';
import { epochNow, type Message } from './children.js';
import type { WorkerTask } from './worker-task.js';
import { commandDelta, parseCommandStats, sleep } from './measure.js';
import { memoryFigures } from './memory-worker.js';

const send = (message: Message): void => void process.send!(message);
const inbox: Message[] = [];
let wake: (() => void) | undefined;
process.on('message', (message: Message) => {
  inbox.push(message);
  wake?.();
});

/** The next message of `type` from the parent. */
async function next(type: string): Promise<Message> {
  for (;;) {
    const i = inbox.findIndex((m) => m.type === type);
    if (i >= 0) return inbox.splice(i, 1)[0];
    await new Promise<void>((resolve) => (wake = resolve));
  }
}

async function waiters(task: Extract<WorkerTask, { kind: 'waiters' }>): Promise<void> {
  const adapters = await openAdapters([task.impl], { url: task.url });
  const adapter = adapters.get(task.impl);
  /** [hold began, its release began] per hold, in this process. */
  const holds: Array<[number, number]> = [];
  let gaveUp = 0;
  let stallMs = 0;
  process.on('message', (m: Message) => {
    if (m.type === 'stall') stallMs = Number(m.ms);
  });
  send({ type: 'ready' });
  await next('start');
  const started = performance.now();
  for (let t = 0; t < task.tasks; t++) {
    const mutex = adapter.mutex(task.key);
    void (async () => {
      for (;;) {
        while (!(await mutex.acquire())) gaveUp++;
        const record: [number, number] = [epochNow(), NaN];
        holds.push(record);
        let hold = task.holdMs;
        if (stallMs > 0) {
          hold = stallMs;
          stallMs = 0;
          send({ type: 'stalling' });
        }
        await sleep(hold);
        record[1] = epochNow();
        await mutex.release();
      }
    })().catch((error: unknown) => send({ type: 'error', message: String((error as Error)?.stack ?? error) }));
  }
  const { from, to } = (await next('collect')) as Message & { from: number; to: number };
  send({ type: 'events', holds: holds.filter(([began, ended]) => began >= from && began < to && !Number.isNaN(ended)), gaveUp, seconds: (performance.now() - started) / 1000 });
}

async function watchdog(task: Extract<WorkerTask, { kind: 'watchdog' }>): Promise<void> {
  let lost = 0;
  const adapters = await openAdapters([task.impl], { url: task.url, leaseMs: task.leaseMs, onLost: () => lost++ });
  const adapter: Adapter = adapters.get(task.impl);
  const probe = createClient({ url: task.url });
  probe.on('error', () => {});
  await probe.connect();
  // The machine's own noise: event-loop delay of this process before it holds anything.
  const idle = monitorEventLoopDelay({ resolution: 5 });
  idle.enable();
  await sleep(1000);
  idle.disable();
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const releases: Release[] = [];
  const started = performance.now();
  let nextKey = 0;
  await Promise.all(
    Array.from({ length: task.concurrency }, async () => {
      while (nextKey < task.count) releases.push(await adapter.hold!(`${task.keyPrefix}:${nextKey++}`));
    }),
  );
  const acquireMs = performance.now() - started;
  const delay = monitorEventLoopDelay({ resolution: 5 });
  const calls0 = adapter.renewalCalls?.() ?? 0;
  const before = parseCommandStats(await probe.info('commandstats'));
  delay.enable();
  await sleep(task.windowMs);
  delay.disable();
  const after = parseCommandStats(await probe.info('commandstats'));
  const seconds = task.windowMs / 1000;
  const requests = commandDelta(before, after, REQUEST_COMMANDS[task.impl]).requests;
  // Nothing but renewals runs during the window: peers renew one lock per request, and relock's
  // renewal script runs one PEXPIRE per lock it renews. Both counts come from the same two snapshots.
  const renewed = adapter.renewalCalls ? (after.get('pexpire')?.calls ?? 0) - (before.get('pexpire')?.calls ?? 0) : requests;
  globalThis.gc?.();
  const memory = process.memoryUsage();
  send({
    type: 'measured',
    figures: {
      heldLocks: releases.length,
      acquireSec: acquireMs / 1000,
      renewalCallsPerSec: adapter.renewalCalls ? (adapter.renewalCalls() - calls0) / seconds : requests / seconds,
      locksRenewedPerSec: renewed / seconds,
      callsPer100Renewals: renewed === 0 ? NaN : (100 * requests) / renewed,
      redisCommandsPerSec: requests / seconds,
      eventLoopDelayP99Ms: delay.percentile(99) / 1e6,
      eventLoopDelayMaxMs: delay.max / 1e6,
      idleEventLoopDelayP99Ms: idle.percentile(99) / 1e6,
      rssMb: memory.rss / 2 ** 20,
      heapBytesPerHold: (memory.heapUsed - heapBefore) / Math.max(1, releases.length),
      locksLost: lost,
    },
  });
}

async function memory(task: Extract<WorkerTask, { kind: 'memory' }>): Promise<void> {
  const adapters = await openAdapters([task.impl], { url: task.url, ...(task.baseline ? { baseline: task.baseline } : {}) });
  try {
    send({ type: 'measured', figures: await memoryFigures(adapters.get(task.impl), task.keyPrefix, task.holds, task.cycles, task.samples) });
  } finally {
    await adapters.close();
  }
}

const RUN = { waiters, watchdog, memory } as const;

process.once('message', (task: WorkerTask) => {
  (RUN[task.kind] as (t: WorkerTask) => Promise<void>)(task).catch((error: unknown) => {
    send({ type: 'error', message: String((error as Error)?.stack ?? error) });
  });
});
