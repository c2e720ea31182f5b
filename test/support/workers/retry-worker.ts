/**
 * A separate Node process whose calls retry at once: a Valkey GLIDE client with `inflightRequestsLimit: 2`
 * whose two slots the user's own blocking commands fill (two `BLPOP`s of 300 ms), then `calls` concurrent
 * `tryLock`s on distinct names: GLIDE refuses relock's commands unsent until the `BLPOP`s return, and
 * relock retries them (its own burst never meets the limit: it waits for slots, see `InFlightGate`). argv[2]: JSON `{ host, port, calls }`. Prints `{ type: 'done', granted, failed }` and
 * exits; whatever Node warns about goes to stderr, for the test to read.
 */
import { GlideClient } from '@valkey/valkey-glide';
import { createLockClient } from '../../../src/index.js';

const args = JSON.parse(process.argv[2] ?? '{}') as { host: string; port: number; calls: number };
const glide = await GlideClient.createClient({ addresses: [{ host: args.host, port: args.port }], inflightRequestsLimit: 2 });
const client = createLockClient({ redis: glide, retry: { retries: 500, minTimeout: 1, maxTimeout: 5, factor: 1, randomize: true } });
// The user's own commands fill the client's two slots for 300 ms.
const blocking = [0, 1].map((i) => glide.customCommand(['BLPOP', `retry-worker:empty:${process.pid}:${i}`, '0.3']));
const locks = Array.from({ length: args.calls }, (_, i) => client.getLock(`retry-worker:{${process.pid}:${i}}`));
const results = await Promise.allSettled(locks.map((lock) => lock.tryLock(5, 10, 'seconds')));
await Promise.all(blocking);
const granted = results.filter((r) => r.status === 'fulfilled' && r.value).length;
await Promise.all(locks.map((lock) => lock.forceUnlock()));
await client.shutdown();
glide.close();
const firstError = results.find((r) => r.status === 'rejected')?.reason as Error | undefined;
process.stdout.write(`${JSON.stringify({ type: 'done', granted, failed: results.length - granted, firstError: firstError?.message })}\n`);
