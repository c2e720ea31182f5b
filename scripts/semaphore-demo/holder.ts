/**
 * A permit holder for the semaphore demo (scripts/semaphore-demo.ts), in its own process with its own
 * relock client: it acquires one permit with the lease it is given, reports the permit id over IPC and
 * then keeps working until it is killed. It never releases: the demo kills it with SIGKILL.
 */
import { createClient } from 'redis';
import { createLockClient } from '../../src/index.js';

export interface HolderTask {
  url: string;
  name: string;
  leaseMs: number;
}

process.once('message', (task: HolderTask) => {
  void (async () => {
    const redis = createClient({ url: task.url });
    redis.on('error', () => {});
    await redis.connect();
    const semaphore = createLockClient({ redis }).getPermitExpirableSemaphore(task.name);
    const id = await semaphore.tryAcquire(5000, task.leaseMs, 'ms');
    process.send!({ id: id ?? null });
    setInterval(() => {}, 1000);
  })().catch((error: unknown) => {
    process.send!({ error: String(error) });
    process.exit(1);
  });
});
