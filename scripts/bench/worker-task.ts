import type { Impl } from './adapters/types.js';

/** What the benchmark's parent process asks a worker process (worker.ts) to run. */
export type WorkerTask =
  | { kind: 'waiters'; impl: Impl; url: string; key: string; tasks: number; holdMs: number }
  | { kind: 'watchdog'; impl: Impl; url: string; keyPrefix: string; count: number; leaseMs: number; windowMs: number; concurrency: number }
  | { kind: 'memory'; impl: Impl; url: string; keyPrefix: string; holds: number; cycles: number; samples: number; baseline?: string };

