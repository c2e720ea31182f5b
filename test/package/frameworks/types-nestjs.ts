// Type-checked against the built package (not run): a NestJS app with relock/nestjs, with TypeScript's
// experimentalDecorators (as Nest needs) and without emitDecoratorMetadata.
import { Controller, Module, Param, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { LockClient } from 'relock';
import { currentLock, InjectLockClient, LockConflictFilter, RelockModule, RunExclusive, WithLock } from 'relock/nestjs';

@Controller('orders')
class OrdersController {
  constructor(@InjectLockClient() private readonly locks: LockClient) {}

  @Post(':id/pay')
  @WithLock('order:{{0}}', { kind: 'fenced', waitMs: 2000 })
  async pay(@Param('id') id: string): Promise<{ id: string; token: string }> {
    return { id, token: String(currentLock()?.token) };
  }

  @RunExclusive('nightly-report', { atMostMs: 60_000, atLeastMs: 5_000 })
  async report(): Promise<void> {
    await this.locks.getLock('report').tryLock(0, 5, 'seconds');
  }
}

@Module({
  imports: [RelockModule.forRootAsync({ useFactory: () => ({ url: 'redis://localhost:6379' }) })],
  controllers: [OrdersController],
})
class AppModule {}

const app = await NestFactory.create(AppModule);
app.useGlobalFilters(new LockConflictFilter());
app.enableShutdownHooks();
await app.listen(3000);
// @ts-expect-error atMostMs is required
RunExclusive('job', {});
