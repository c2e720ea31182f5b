// Type-checked against the built package (not run): an Express app with relock/express.
import express, { type Request, type Response } from 'express';
import { createLockClient } from 'relock';
import { attachLocks, lockConflictHandler, lockContext, shutdownOnClose, withLock, type HeldLock } from 'relock/express';

const app = express();
const locks = attachLocks(app, createLockClient({ url: 'redis://localhost:6379' }));
app.use(express.json(), lockContext());
app.post(
  '/orders/:id/pay',
  withLock('order:{{params.id}}', async (req: Request<{ id: string }>, res: Response, held: HeldLock) => {
    const token: bigint | undefined = held.token;
    res.json({ id: req.params.id, token: String(token) });
  }, { kind: 'fenced', waitMs: 2000 }),
);
// @ts-expect-error kind is one of lock, fair, read, write, fenced
withLock('a', () => {}, { kind: 'mutex' });
app.use(lockConflictHandler());
const done: Promise<void> = shutdownOnClose(app.listen(3000), locks);
void done;
