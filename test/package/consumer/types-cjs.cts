// Type-checked against the built package (not run): a CommonJS consumer under moduleResolution node16,
// where `import` compiles to `require` and resolves the "require" condition (dist/cjs).
import { createLockClient, IllegalMonitorStateError, type RLock } from 'relock';
import relock = require('relock');

async function main(): Promise<void> {
  const locks = createLockClient({ url: 'redis://localhost:6379' });
  const lock: RLock = locks.getLock('job:{nightly}');
  if (await lock.tryLock(0, 30, 'seconds')) {
    try {
      await lock.unlock();
    } catch (error) {
      if (!(error instanceof IllegalMonitorStateError)) throw error;
    }
  }
  const semaphore: relock.RSemaphore = locks.getSemaphore('slots');
  const free: number = await semaphore.availablePermits();
  void free;
  await locks.shutdown();
}

void main();
