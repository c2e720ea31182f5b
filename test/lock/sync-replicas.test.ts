import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { createLockClient } from '../../src/index.js';
import { commandCalls, connect, uniqueName, waitUntil, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';

let primary: RedisServer;
let replica: RedisServer;
let redis: Redis;

beforeAll(async () => {
  primary = await startRedis({ controllable: true, args: ['--repl-diskless-sync-delay', '0'] });
  replica = await startRedis({ controllable: true, args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  redis = await connect(primary.url);
  await waitUntil(async () => Number(await redis.sendCommand(['WAIT', '1', '100'])) === 1, 10_000, 50, 'the replica to sync');
});
afterAll(async () => {
  await redis.close();
  await replica.stop();
  await primary.stop();
});

describe('syncReplicas', () => {
  it('waits for a replica after each acquisition, and the lock is on the replica when tryLock returns', async () => {
    const client = createLockClient({ redis, syncReplicas: true });
    const replicaRedis = await connect(replica.url);
    const waitsBefore = await commandCalls(redis, 'wait');
    const lock = client.getLock(uniqueName());
    for (let i = 0; i < 5; i++) {
      expect(await lock.tryLock(0, 5, 'seconds')).toBe(true);
      expect(await replicaRedis.exists(lock.key)).toBe(1);
      await lock.unlock();
    }
    expect((await commandCalls(redis, 'wait')) - waitsBefore).toBe(5);
    await client.shutdown();
    await replicaRedis.close();
  });

  it('degrades with one warning when the server refuses WAIT', async () => {
    await redis.sendCommand(['ACL', 'SETUSER', 'nowait', 'on', 'nopass', '~*', '&*', '+@all', '-wait']);
    const limited = await connect(primary.url, { username: 'nowait', password: 'any' } as Parameters<typeof connect>[1]);
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const client = createLockClient({ redis: limited, syncReplicas: true, logger });
    try {
      const lock = client.getLock(uniqueName());
      expect(await lock.tryLock(0, 5, 'seconds')).toBe(true);
      await lock.unlock();
      expect(await lock.tryLock(0, 5, 'seconds')).toBe(true);
      await lock.unlock();
      expect(lines.filter((l) => l.includes('refuses WAIT'))).toHaveLength(1);
    } finally {
      await client.shutdown();
      await limited.close();
    }
  });

  it('sends no WAIT when the primary has no replica', async () => {
    const alone = await startRedis();
    const aloneRedis = await connect(alone.url);
    const client = createLockClient({ redis: aloneRedis, syncReplicas: true });
    const lock = client.getLock(uniqueName());
    expect(await lock.tryLock(0, 5, 'seconds')).toBe(true);
    await lock.unlock();
    expect(await commandCalls(aloneRedis, 'wait')).toBe(0);
    await client.shutdown();
    await aloneRedis.close();
    await alone.stop();
  });
});
