/**
 * `relock/nestjs`: relock in a NestJS (11 or 12) app. `@nestjs/common`, `@nestjs/core`, `rxjs` and
 * `reflect-metadata` are optional peer dependencies, loaded only by an app that imports this subpath.
 *
 * ```ts
 * @Module({ imports: [RelockModule.forRoot({ url: 'redis://localhost:6379' })] })
 * class AppModule {}
 *
 * class OrdersService {
 *   @WithLock('order:{{0.id}}', { waitMs: 2000 })
 *   async pay(order: { id: string }) { … }
 * }
 * app.useGlobalFilters(new LockConflictFilter()); // LockAcquireTimeoutError → 409
 * app.enableShutdownHooks();                      // SIGTERM → LockClient.shutdown()
 * ```
 *
 * The decorators are TypeScript's `experimentalDecorators` (as Nest's own); `emitDecoratorMetadata` is
 * not needed. See docs/nestjs.md.
 *
 * @module
 */
export { InjectLockClient, LOCK_CLIENT, RelockModule, type RelockClientOptions, type RelockModuleAsyncOptions, type RelockModuleExtras, type RelockModuleOptions } from './module.js';
export { currentLock, RunExclusive, WithLock, type CurrentLock } from './decorators.js';
export { LockConflictFilter, RelockContextInterceptor } from './http.js';
export type { HeldLock, LockedRunOptions, LockKind } from '../integrations/run-locked.js';
export type { LockNameSource } from '../integrations/name-template.js';
export type { RunExclusiveOptions } from '../job-lock/job-lock.js';
