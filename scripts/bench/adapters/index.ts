import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { relockLibrary } from './relock-lib.js';
import type { Adapter, AdapterOptions, Impl } from './types.js';

/** relock from the source tree `options.baseline` (its `src/index.ts`; its node_modules must resolve). */
async function baseline(options: AdapterOptions): Promise<typeof import('../../../src/index.js')> {
  if (options.baseline === undefined) throw new Error('relock-base needs --baseline DIR (a source tree of relock, such as a git worktree of main)');
  return (await import(pathToFileURL(join(resolve(options.baseline), 'src', 'index.ts')).href)) as typeof import('../../../src/index.js');
}

export interface Adapters {
  readonly list: readonly Adapter[];
  get(impl: Impl): Adapter;
  close(): Promise<void>;
}

/** relock, or the floor, on a `GlideClient` of its own (default configuration), closed with the adapter. */
async function glideAdapter(impl: 'relock-glide' | 'floor-glide', options: AdapterOptions): Promise<Adapter> {
  const { GlideClient } = await import('@valkey/valkey-glide');
  const { hostname, port } = new URL(options.url);
  const glide = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port || 6379) }] });
  const adapter =
    impl === 'relock-glide'
      ? (await import('./relock.js')).relockAdapter(glide, options, impl, await relockLibrary())
      : await (await import('./floor.js')).floorAdapter({ sendCommand: (args) => glide.customCommand([...args]) }, impl);
  return { ...adapter, close: () => adapter.close().finally(() => glide.close()) };
}

/** The libraries on the shared node-redis client; those on GLIDE have clients of their own, the rest share the ioredis one. */
const ON_NODE_REDIS: readonly Impl[] = ['relock', 'non-reentrant', 'relock-base', 'floor', 'floor-setnx', 'lua-floor', 'hash-floor'];
const ON_GLIDE: readonly Impl[] = ['relock-glide', 'floor-glide'];

/**
 * Opens the adapters of `impls` against one Redis. relock (and `relock-base`), `floor`, `floor-setnx`,
 * `lua-floor` and `hash-floor`
 * share one node-redis client made with `createClient({ url })` and nothing else (node-redis 6 defaults,
 * per-command timeout included: relock must not pay it). relock-ioredis, `floor-ioredis` and the peers
 * share one ioredis client, made with `new Redis(url, { autoResendUnfulfilledCommands: false })` (so that
 * relock sends on it rather than on a duplicate: src/redis/clients/ioredis.ts); `relock-glide` and
 * `floor-glide` get a GlideClient each (and no ioredis client is opened for them). Libraries are imported
 * only when asked for, so that a child process measuring one of them starts quickly.
 */
export async function openAdapters(impls: readonly Impl[], options: AdapterOptions): Promise<Adapters> {
  let redis: ReturnType<typeof createClient> | undefined;
  if (impls.some((impl) => ON_NODE_REDIS.includes(impl))) {
    redis = createClient({ url: options.url });
    redis.on('error', () => {});
    await redis.connect();
  }
  let ioredis: Redis | undefined;
  if (impls.some((impl) => !ON_NODE_REDIS.includes(impl) && !ON_GLIDE.includes(impl))) {
    ioredis = new Redis(options.url, { autoResendUnfulfilledCommands: false });
    ioredis.on('error', () => {});
  }
  const list: Adapter[] = [];
  for (const impl of impls) {
    if (impl === 'relock') list.push((await import('./relock.js')).relockAdapter(redis!, options, impl, await relockLibrary()));
    else if (impl === 'relock-base') list.push((await import('./relock.js')).relockAdapter(redis!, options, impl, await baseline(options)));
    else if (impl === 'non-reentrant') list.push((await import('./relock.js')).relockAdapter(redis!, options, impl, await relockLibrary()));
    else if (impl === 'relock-ioredis') list.push((await import('./relock.js')).relockAdapter(ioredis!, options, impl, await relockLibrary()));
    else if (impl === 'relock-glide' || impl === 'floor-glide') list.push(await glideAdapter(impl, options));
    else if (impl === 'floor' || impl === 'floor-setnx') list.push(await (await import('./floor.js')).floorAdapter(redis!, impl));
    else if (impl === 'lua-floor' || impl === 'hash-floor') list.push(await (await import('./floor.js')).hashFloorAdapter(redis!, impl));
    else if (impl === 'floor-ioredis') list.push(await (await import('./floor.js')).ioredisFloorAdapter(ioredis!));
    else if (impl === 'redis-semaphore' || impl === 'redis-semaphore-tuned') list.push((await import('./redis-semaphore.js')).redisSemaphoreAdapter(ioredis!, options, impl === 'redis-semaphore-tuned'));
    else list.push((await import('./redlock.js')).redlockAdapter(impl, ioredis!, options));
  }
  return {
    list,
    get(impl) {
      const adapter = list.find((a) => a.impl === impl);
      if (!adapter) throw new Error(`adapter ${impl} is not open`);
      return adapter;
    },
    async close() {
      await Promise.all(list.map((a) => a.close()));
      await redis?.close();
      await ioredis?.quit();
    },
  };
}
