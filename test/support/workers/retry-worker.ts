/**
 * A separate Node process whose calls retry at once: a Valkey GLIDE client with `inflightRequestsLimit: 2`
 * (GLIDE refuses the calls past it unsent, and relock retries them), `calls` concurrent `tryLock`s on
 * distinct names. argv[2]: JSON `{ host, port, calls }`. Prints `{ type: 'done', granted, failed }` and
 * exits; whatever Node warns about goes to stderr, for the test to read.
 */
import { GlideClient } from '@valkey/valkey-glide';
import { createLockClient } from '../../../src/index.js';

const args = JSON.parse(process.argv[2] ?? '{}') as { host: string; port: number; calls: number };
const glide = await GlideClient.createClient({ addresses: [{ host: args.host, port: args.port }], inflightRequestsLimit: 2 });
const client = createLockClient({ redis: glide, retry: { retries: 50, minTimeout: 1, maxTimeout: 5, factor: 1, randomize: true } });
const locks = Array.from({ length: args.calls }, (_, i) => client.getLock(`retry-worker:{${process.pid}:${i}}`));
const results = await Promise.allSettled(locks.map((lock) => lock.tryLock(5, 10, 'seconds')));
const granted = results.filter((r) => r.status === 'fulfilled' && r.value).length;
await Promise.all(locks.map((lock) => lock.forceUnlock()));
await client.shutdown();
glide.close();
process.stdout.write(`${JSON.stringify({ type: 'done', granted, failed: results.length - granted })}\n`);
