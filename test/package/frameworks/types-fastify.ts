// Type-checked against the built package (not run): a Fastify app with relock/fastify.
import Fastify, { type FastifyRequest } from 'fastify';
import type { LockClient } from 'relock';
import { relockPlugin, withLock } from 'relock/fastify';

const app = Fastify();
await app.register(relockPlugin, { url: 'redis://localhost:6379', keyPrefix: 'app:' });
const locks: LockClient = app.locks;
app.post(
  '/orders/:id/pay',
  withLock('order:{{params.id}}', async (req: FastifyRequest<{ Params: { id: string } }>, _reply, held) => ({ id: req.params.id, token: String(held.token) }), { kind: 'fenced' }),
);
// @ts-expect-error waitMs is a number of milliseconds
withLock('a', () => 1, { waitMs: '2s' });
await locks.getLock('x').tryLock(0, 5, 'seconds');
await app.close();
