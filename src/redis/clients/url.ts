import { InvalidArgumentError } from '../../errors.js';
import type { Connection, ErrorSink } from '../connection.js';
import { ioredisUrlConnection, type IoRedisConstructor } from './ioredis.js';
import { nodeRedisUrlConnection, type CreateClient } from './node-redis.js';

/**
 * The client libraries `createLockClient({ url })` can open a connection with, in order of preference:
 * the first one installed is used. Each is imported only when a URL is given (none is a dependency of
 * relock: they are optional peer dependencies).
 */
const LIBRARIES: ReadonlyArray<{ name: string; open(module: Record<string, unknown>, url: string, onError: ErrorSink): Connection }> = [
  { name: 'redis', open: (m, url, onError) => nodeRedisUrlConnection(m.createClient as CreateClient, url, onError) },
  { name: 'ioredis', open: (m, url, onError) => ioredisUrlConnection((m.Redis ?? m.default) as IoRedisConstructor, url, onError) },
  { name: 'iovalkey', open: (m, url, onError) => ioredisUrlConnection((m.Redis ?? m.default) as IoRedisConstructor, url, onError) },
];

/** `import(name)` behind a variable, so that bundlers and tsc leave the missing libraries alone. */
const load = (name: string): Promise<Record<string, unknown>> => import(name) as Promise<Record<string, unknown>>;

/** Whether `error` says that the library itself is not installed (not that one of its own imports failed). */
const notInstalled = (error: unknown, name: string): boolean =>
  ['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND'].includes(String((error as { code?: unknown } | null)?.code)) && String((error as Error).message).includes(`'${name}'`);

async function openFirstInstalled(url: string, onError: ErrorSink): Promise<Connection> {
  for (const library of LIBRARIES) {
    let module: Record<string, unknown>;
    try {
      module = await load(library.name);
    } catch (error) {
      if (notInstalled(error, library.name)) continue;
      throw error;
    }
    return library.open(module, url, onError);
  }
  throw new InvalidArgumentError('url', 'relock opens `url` with a Redis client library and found none installed: run `npm install redis` (or ioredis, or iovalkey), or pass your own client as `redis`');
}

/**
 * The connection of `createLockClient({ url })`, made at once: the client library (node-redis if installed,
 * else ioredis, else iovalkey) is imported in the background, and commands wait for it. With none
 * installed, every command (the first one included) rejects with `InvalidArgumentError` saying what to install.
 */
export function urlConnection(url: string, onError: ErrorSink): Connection {
  const inner = openFirstInstalled(url, onError);
  let opened: Connection | undefined;
  inner.then((c) => (opened = c), () => {});
  return {
    topology: 'standalone',
    get family() {
      return opened?.family ?? 'node-redis';
    },
    clientKeyPrefix: undefined,
    publishCommand: 'publish',
    send: (firstKey, args) => inner.then((c) => c.send(firstKey, args)),
    sendKeyless: (slotKey, args) => inner.then((c) => c.sendKeyless(slotKey, args)),
    subscribe: (channel, listener) => inner.then((c) => c.subscribe(channel, listener)),
    unsubscribe: (channel, listener) => inner.then((c) => c.unsubscribe(channel, listener)),
    onReconnected: (callback) => void inner.then((c) => c.onReconnected(callback), () => {}),
    // relock's own client: only close() ends it.
    onClosed: () => {},
    offline: () => opened?.offline() ?? false,
    close: () => inner.then((c) => c.close(), () => {}),
  };
}
