/**
 * redlock 5.0.0-beta.2 ships its types at dist/index.d.ts but its package.json `exports` map does not
 * point at them, so NodeNext resolution finds none. The part the benchmark uses:
 */
declare module 'redlock' {
  import type { Redis } from 'ioredis';

  export class ExecutionError extends Error {}

  export default class Redlock {
    constructor(clients: Iterable<Redis>, settings?: Partial<{ retryCount: number; retryDelay: number; retryJitter: number; automaticExtensionThreshold: number }>);
    acquire(resources: string[], duration: number): Promise<{ release(): Promise<unknown> }>;
    using<T>(resources: string[], duration: number, routine: (signal: AbortSignal) => Promise<T>): Promise<T>;
    quit(): Promise<void>;
  }
}
