import { Inject, type DynamicModule, type InjectionToken, type ModuleMetadata, type OptionalFactoryDependency, type Provider } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { createLockClient, type LockClient, type LockClientOptions } from '../client.js';
import { InvalidArgumentError } from '../errors.js';
import { RelockContextInterceptor } from './http.js';

/** The injection token of the app's `LockClient` (`@InjectLockClient()` is `@Inject(LOCK_CLIENT)`). */
export const LOCK_CLIENT: InjectionToken<LockClient> = Symbol('relock:LockClient');

/** The injection token of the options `forRootAsync`'s factory resolved to. */
const RELOCK_OPTIONS = Symbol('relock:options');

/** The client of `RelockModule`: a `LockClient` you made (`client`), or the options of `createLockClient` (`redis` or `url`, …). */
export type RelockClientOptions =
  | {
      /** A `LockClient` you made; the module still shuts it down on application shutdown. */
      client: LockClient;
    }
  | LockClientOptions;

/** What `RelockModule` adds to the app besides the client. */
export interface RelockModuleExtras {
  /**
   * Whether every request runs in its own lock context (`RelockContextInterceptor`, registered as a global
   * interceptor), so reentrancy follows the request: two `lock()` calls on one name in one request
   * reenter, `unlock()` by name releases the request's own hold. Default true.
   */
  requestContext?: boolean;
}

/** Options of `RelockModule.forRoot`. */
export type RelockModuleOptions = RelockClientOptions & RelockModuleExtras;

/** Options of `RelockModule.forRootAsync`: the client options come from `useFactory`, run with the providers `inject` names. */
export interface RelockModuleAsyncOptions extends RelockModuleExtras {
  /** Modules that export the providers `inject` names (a `ConfigModule`, say). */
  imports?: ModuleMetadata['imports'];
  /** Resolves to the client options (`{ url }`, `{ redis }`, `{ client }`, …); may be async. */
  useFactory: (...deps: never[]) => RelockClientOptions | Promise<RelockClientOptions>;
  /** The providers passed to `useFactory`, in order. */
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
}

/** Calls `LockClient.shutdown()` on application shutdown (`app.close()`, or a signal with `enableShutdownHooks()`). */
class RelockShutdown {
  constructor(private readonly client: LockClient) {}

  /** Resolves when the client shut down: its watchdog stopped, waiters rejected, connections relock opened closed. */
  onApplicationShutdown(): Promise<void> {
    return this.client.shutdown();
  }
}
Inject(LOCK_CLIENT)(RelockShutdown, undefined, 0);

function clientOf(options: RelockClientOptions): LockClient {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected an object such as { url: "redis://localhost:6379" }');
  if (!('client' in options)) return createLockClient(options);
  if (Object.keys(options).length > 1) throw new InvalidArgumentError('client', 'give either `client` or the options of createLockClient, not both');
  if (typeof (options.client as Partial<LockClient> | undefined)?.getLock !== 'function') throw new InvalidArgumentError('client', 'must be a LockClient (createLockClient())');
  return options.client;
}

/**
 * The relock module for NestJS, global (import it once, in the root module): provides the app's
 * `LockClient` (inject it with `@InjectLockClient()`; `@WithLock` and `@RunExclusive` use it), shuts it
 * down on application shutdown (call `app.enableShutdownHooks()` so that SIGTERM gets there), and runs
 * each request in its own lock context (`requestContext`).
 */
export class RelockModule {
  /**
   * The module with a client made from `options` now (`createLockClient`, which throws
   * `InvalidArgumentError` for a bad option) or given as `options.client`. Sends nothing to Redis.
   */
  static forRoot(options: RelockModuleOptions): DynamicModule {
    const { requestContext = true, ...client } = options ?? {};
    return RelockModule.module([{ provide: LOCK_CLIENT, useValue: clientOf(client) }], requestContext);
  }

  /**
   * The module with a client made from the options `useFactory` resolves to, when the app starts (a bad
   * option fails the start with `InvalidArgumentError`).
   */
  static forRootAsync(options: RelockModuleAsyncOptions): DynamicModule {
    if (typeof options?.useFactory !== 'function') throw new InvalidArgumentError('useFactory', 'must be a function returning the client options');
    const { requestContext = true, imports = [], useFactory, inject = [] } = options;
    const providers: Provider[] = [
      { provide: RELOCK_OPTIONS, useFactory, inject },
      { provide: LOCK_CLIENT, useFactory: clientOf, inject: [RELOCK_OPTIONS] },
    ];
    return { ...RelockModule.module(providers, requestContext), imports };
  }

  private static module(providers: Provider[], requestContext: boolean): DynamicModule {
    const all: Provider[] = [...providers, RelockShutdown];
    if (requestContext) all.push({ provide: APP_INTERCEPTOR, useClass: RelockContextInterceptor });
    return { module: RelockModule, global: true, providers: all, exports: [LOCK_CLIENT] };
  }
}

/** Injects the app's `LockClient` (a constructor parameter or property decorator): `@Inject(LOCK_CLIENT)`. */
export function InjectLockClient(): PropertyDecorator & ParameterDecorator {
  return Inject(LOCK_CLIENT);
}
