/**
 * A service without `@opentelemetry/api` (see hide.mjs): takes and releases a lock on the Redis at argv[2]
 * with the `otel` option argv[3] ('default' or 'false'), and prints {"type":"done", recording, held}.
 */
import type { Core } from '../../../src/core.js';
import { createLockClient } from '../../../src/index.js';

const [url, otel] = process.argv.slice(2) as [string, string];
const client = createLockClient({ url, ...(otel === 'false' ? { otel: false as const } : {}) });
const observe = (client as unknown as { core: Core }).core.observe;
await observe.ready;
const lock = client.getLock(`without-otel:${process.pid}`);
// A generous wait: under load, starting this process and connecting can take more than a second.
const handle = await lock.acquire({ waitMs: 10_000 });
const held = await lock.isLocked();
await handle.release();
await client.shutdown();
process.stdout.write(`${JSON.stringify({ type: 'done', recording: observe.recording, held })}\n`);
