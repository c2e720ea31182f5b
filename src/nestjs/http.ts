import { Catch, type ArgumentsHost, type CallHandler, type ExceptionFilter, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { runInContext } from '../context.js';
import { LockAcquireTimeoutError } from '../errors.js';

/**
 * An interceptor that runs the handler (and what it calls) in a new lock context, so reentrancy follows the
 * request. `RelockModule` registers it globally unless `requestContext: false`; you can also put it on a
 * controller or route (`@UseInterceptors(RelockContextInterceptor)`). Sends nothing to Redis.
 */
export class RelockContextInterceptor implements NestInterceptor {
  /** Subscribes to the handler's stream inside the new context (Nest calls the handler on subscription). */
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return new Observable((subscriber) => runInContext(() => next.handle().subscribe(subscriber)));
  }
}

/** What the filter needs of Express's or Fastify's response. */
interface HttpResponse {
  status?(code: number): { json(body: unknown): unknown };
  code?(code: number): { send(body: unknown): unknown };
}

/**
 * An exception filter for `LockAcquireTimeoutError` (a `@WithLock` whose `waitMs` ran out): answers HTTP
 * 409 Conflict with `{ statusCode: 409, error: 'LOCK_ACQUIRE_TIMEOUT', lock, waitTimeMs }`, on the Express
 * or Fastify platform. 409, not 423 Locked: 423 is WebDAV's answer for a resource under a lock the client
 * can see and release, while here another request is working on the resource and a retry will likely
 * succeed. Register it with `app.useGlobalFilters(new LockConflictFilter())` or `@UseFilters(LockConflictFilter)`.
 */
export class LockConflictFilter implements ExceptionFilter<LockAcquireTimeoutError> {
  /** Sends the 409 answer (HTTP contexts only; others rethrow). */
  catch(error: LockAcquireTimeoutError, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw error;
    const res = host.switchToHttp().getResponse<HttpResponse>();
    const body = { statusCode: 409, error: error.code, lock: error.lockName, waitTimeMs: error.waitTimeMs };
    if (typeof res.status === 'function') res.status(409).json(body);
    else res.code!(409).send(body);
  }
}
Catch(LockAcquireTimeoutError)(LockConflictFilter);
