/**
 * `scripting: 'functions'` on a standalone Redis: the option is checked, relock's library is loaded on the
 * first call and called with FCALL / FCALL_RO, loaded again after a restart that lost it, and found on a
 * promoted replica (FUNCTION LOAD is replicated).
 */
import { describe, expect, it } from '@jest/globals';
import { createLockClient, functionsLibrary, InvalidArgumentError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { commandCalls, connect, lockClient, uniqueName, waitUntil, type Redis } from '../support/helpers.js';
import { startRedis } from '../support/redis.js';

const env = useRedis();

/** The names of the Functions libraries loaded on `redis`. */
async function libraries(redis: Redis): Promise<string[]> {
  const reply = (await redis.sendCommand(['FUNCTION', 'LIST'])) as unknown[];
  return reply.map((library) => {
    // A flat [field, value, …] array under RESP2, a map (object or Map) under RESP3.
    const fields = Array.isArray(library) ? library : library instanceof Map ? [...library].flat() : Object.entries(library as object).flat();
    return String(fields[fields.indexOf('library_name') + 1]);
  });
}

describe('scripting option', () => {
  it('rejects anything but eval, functions or auto with InvalidArgumentError naming it, before anything is sent', async () => {
    const before = await commandCalls(env.redis, 'evalsha');
    for (const scripting of ['lua', 'EVAL', '', 1, null]) {
      expect(() => createLockClient({ redis: env.redis, scripting: scripting as never })).toThrow(
        expect.objectContaining({ constructor: InvalidArgumentError, argument: 'scripting' }) as unknown as Error,
      );
    }
    expect(await commandCalls(env.redis, 'evalsha')).toBe(before);
  });
});

describe('functions mode', () => {
  it('loads relock_<hash> on the first call, then calls FCALL (FCALL_RO for reads) and never EVAL/EVALSHA', async () => {
    await env.redis.sendCommand(['FUNCTION', 'FLUSH']);
    const { name } = functionsLibrary();
    expect(name).toMatch(/^relock_[0-9a-f]{16}$/);
    const c = lockClient(env.redis, { scripting: 'functions' });
    const evals = (await commandCalls(env.redis, 'evalsha')) + (await commandCalls(env.redis, 'eval'));
    const [loads, reads] = [await commandCalls(env.redis, 'function\\|load'), await commandCalls(env.redis, 'fcall_ro')];
    const lock = c.getLock(uniqueName());
    const handle = await lock.acquire({ leaseMs: 5000 });
    expect(await libraries(env.redis)).toEqual([name]);
    expect(await c.getReadWriteLock(uniqueName()).readLock().isLocked()).toBe(false);
    await handle.release();
    expect(await commandCalls(env.redis, 'function\\|load')).toBe(loads + 1);
    expect(await commandCalls(env.redis, 'fcall_ro')).toBe(reads + 1);
    expect((await commandCalls(env.redis, 'evalsha')) + (await commandCalls(env.redis, 'eval'))).toBe(evals);
  });

  it('concurrent first calls of several clients on a server without the library all succeed (one load wins, the others find it loaded)', async () => {
    await env.redis.sendCommand(['FUNCTION', 'FLUSH']);
    const clients = [1, 2, 3, 4].map(() => lockClient(env.redis, { scripting: 'functions' }));
    const locks = clients.map((c) => c.getLock(uniqueName()));
    const handles = await Promise.all(locks.map((lock) => lock.acquire({ leaseMs: 5000 })));
    for (const lock of locks) expect(await env.redis.exists(lock.key)).toBe(1);
    await Promise.all(handles.map((h) => h.release()));
    expect(await libraries(env.redis)).toEqual([functionsLibrary().name]);
  });

  it('loads the library again after a restart lost it, and the lock works as before', async () => {
    const c = lockClient(env.redis, { scripting: 'functions' });
    const lock = c.getLock(uniqueName());
    await (await lock.acquire({ leaseMs: 5000 })).release();
    await env.server.restart();
    await waitUntil(() => env.redis.isReady, 5000, 10, 'the client to reconnect');
    expect(await libraries(env.redis)).toEqual([]);
    const handle = await lock.acquire({ leaseMs: 5000 });
    expect(await env.redis.exists(lock.key)).toBe(1);
    expect(await libraries(env.redis)).toEqual([functionsLibrary().name]);
    await handle.release();
    expect(await env.redis.exists(lock.key)).toBe(0);
  });

  it('a replica promoted to primary has the library already (FUNCTION LOAD is replicated): no load there', async () => {
    await env.redis.configSet('repl-diskless-sync-delay', '0');
    const replica = await startRedis({ controllable: true, args: ['--replicaof', env.server.host, String(env.server.port)] });
    const onReplica = await connect(replica.url);
    try {
      await waitUntil(async () => String(await onReplica.info('replication')).includes('master_link_status:up'), 10_000, 20, 'the replica to sync');
      await env.redis.sendCommand(['FUNCTION', 'FLUSH']);
      const c = lockClient(env.redis, { scripting: 'functions' });
      await (await c.getLock(uniqueName()).acquire({ leaseMs: 5000 })).release();
      await waitUntil(async () => (await libraries(onReplica)).length === 1, 5000, 20, 'the library to reach the replica');
      await onReplica.sendCommand(['REPLICAOF', 'NO', 'ONE']);
      const loads = await commandCalls(onReplica, 'function\\|load'); // the replicated one
      const promoted = lockClient(onReplica, { scripting: 'functions' });
      const lock = promoted.getLock(uniqueName());
      await (await lock.acquire({ leaseMs: 5000 })).release();
      expect(await commandCalls(onReplica, 'function\\|load')).toBe(loads);
      expect(await commandCalls(onReplica, 'fcall')).toBeGreaterThanOrEqual(2);
    } finally {
      await onReplica.close();
      await replica.stop();
    }
  });
});
