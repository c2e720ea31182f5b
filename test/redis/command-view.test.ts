/**
 * relock's commands run without the user's per-command timeout and type mapping on node-redis 5 and 6,
 * and on node-redis 6 through a view with the options set once (no per-call options: issue 12).
 */
import { describe, expect, it } from '@jest/globals';
import { createClient, createCluster, createSentinel, RESP_TYPES } from 'redis';
import { createClient as createClientV5, createCluster as createClusterV5, createSentinel as createSentinelV5 } from 'redis-v5';
import { openConnection } from '../../src/redis/clients/index.js';
import { commandView } from '../../src/redis/clients/node-redis.js';
import { useRedis } from '../support/harness.js';
import { uniqueName } from '../support/helpers.js';

const env = useRedis();
const BUFFERS = { [RESP_TYPES.BLOB_STRING]: Buffer };
const cluster = { rootNodes: [{ url: 'redis://127.0.0.1:1' }] };
const sentinel = { name: 'primary', sentinelRootNodes: [{ host: '127.0.0.1', port: 1 }] };

describe('commandView', () => {
  it('node-redis 6: a view without timeout, type mapping or abort signal, and no per-call options, on every topology', () => {
    const standalone = commandView(createClient({ commandOptions: { typeMapping: BUFFERS } }), 'standalone');
    expect(standalone.options).toBeUndefined();
    expect((standalone.target as unknown as { _commandOptions: object })._commandOptions).toEqual({ timeout: undefined, typeMapping: undefined, abortSignal: undefined });
    const onCluster = commandView(createCluster(cluster), 'cluster');
    expect(onCluster.options).toBeUndefined();
    expect((onCluster.target as unknown as { _commandOptions: object })._commandOptions).toEqual({ timeout: undefined, typeMapping: undefined, abortSignal: undefined });
    const onSentinel = commandView(createSentinel(sentinel), 'sentinel');
    expect(onSentinel.options).toBeUndefined();
    expect((onSentinel.target as unknown as { commandOptions: Record<string, unknown> }).commandOptions.timeout).toBeUndefined();
  });

  it('node-redis 5: the client itself; per-call options only when its defaults set a timeout or type mapping', () => {
    for (const [make, topology] of [
      [() => createClientV5(), 'standalone'],
      [() => createClusterV5(cluster), 'cluster'],
      [() => createSentinelV5(sentinel), 'sentinel'],
    ] as const) {
      const plain = make();
      expect(commandView(plain, topology)).toEqual({ target: plain, options: undefined });
    }
    const timed = createClientV5({ commandOptions: { timeout: 1000 } });
    expect(commandView(timed, 'standalone')).toEqual({ target: timed, options: { timeout: undefined, typeMapping: undefined, abortSignal: undefined } });
    const mapped = createClusterV5({ ...cluster, commandOptions: { typeMapping: BUFFERS } });
    expect(commandView(mapped, 'cluster').options).toEqual({ timeout: undefined, typeMapping: undefined, abortSignal: undefined });
  });
});

describe("a user client's type mapping never reaches relock's replies", () => {
  for (const [major, make] of [
    ['6', () => createClient({ url: env.server.url, commandOptions: { typeMapping: BUFFERS } })],
    ['5', () => createClientV5({ url: env.server.url, commandOptions: { typeMapping: BUFFERS } })],
  ] as const) {
    it(`node-redis ${major}: a string reply is a string (the user's client maps it to a Buffer)`, async () => {
      const redis = make();
      redis.on('error', () => {});
      await redis.connect();
      const connection = openConnection({ redis, onError: () => {} });
      try {
        const key = uniqueName();
        await env.redis.set(key, 'value');
        expect(await redis.sendCommand(['GET', key])).toBeInstanceOf(Buffer);
        expect(await connection.send(key, ['GET', key])).toBe('value');
      } finally {
        await connection.close();
        await redis.close();
      }
    });
  }
});
