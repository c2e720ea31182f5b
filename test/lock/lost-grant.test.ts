/**
 * A grant whose reply was lost (issue 16, defect 3): `tryLock()` rejects with `RedisUnavailableError`
 * although Redis granted it. The owner's next acquisition must adopt that grant (inside a context), or the
 * grant must be released once Redis answers again (outside any context, where the next call is another
 * owner): either way one successful acquisition and one unlock leave no key. The reply is lost through a
 * TCP proxy that forwards the acquire script, drops Redis's reply and resets the connection, then refuses
 * new connections for a while (standalone Redis only: a cluster client would bypass the proxy).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { createLockClient, RedisUnavailableError, runInContext, type LockClient, type RLock } from '../../src/index.js';
import { FAIR_ACQUIRE } from '../../src/fair-lock/scripts.js';
import { FENCED_ACQUIRE } from '../../src/fenced-lock/scripts.js';
import { ACQUIRE } from '../../src/lock/scripts.js';
import type { Script } from '../../src/redis/script.js';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName, waitUntil } from '../support/helpers.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';

const env = useRedis();
let proxy: TcpProxy | undefined;
let client: LockClient | undefined;
afterEach(async () => {
  await client?.shutdown();
  await proxy?.close();
  client = proxy = undefined;
});

/** Nil, in RESP2 and RESP3 (node-redis 5 speaks RESP2, 6 RESP3). */
const NIL = ['$-1\r\n', '_\r\n'];

/** How a granted acquire's reply starts: nil for the RLock and fair lock, `{1, token}` for the fenced lock. */
const KINDS: Array<[string, (c: LockClient, name: string) => RLock, Script, readonly string[]]> = [
  ['RLock', (c, name) => c.getLock(name), ACQUIRE, NIL],
  ['fenced lock', (c, name) => c.getFencedLock(name), FENCED_ACQUIRE, ['*2\r\n:1\r\n']],
  ['fair lock', (c, name) => c.getFairLock(name), FAIR_ACQUIRE, NIL],
];

/** How long the proxy refuses connections after the cut: longer than the client's retry policy. */
const REFUSE_MS = 600;

/** A lock client through a new proxy, with a retry policy (about 60 ms) much shorter than the refusal. */
async function throughProxy(): Promise<{ proxy: TcpProxy; client: LockClient }> {
  proxy = await startProxy('127.0.0.1', env.server.port);
  client = createLockClient({ url: `redis://127.0.0.1:${proxy.port}`, retry: { retries: 2, minTimeout: 10, maxTimeout: 20 }, responseTimeout: 1000 });
  return { proxy, client };
}

/**
 * Loses the reply of the next granted acquire of `lock`'s kind: `tryLock()` rejects although Redis granted
 * it. The script is loaded first, so that the acquire goes as an EVALSHA that names it.
 */
async function loseGrant(p: TcpProxy, lock: RLock, script: Script, reply: readonly string[]): Promise<void> {
  await env.redis.scriptLoad(script.source);
  const cut = p.loseReply({ match: script.sha, replyPrefix: reply, refuseMs: REFUSE_MS });
  await expect(lock.tryLock()).rejects.toBeInstanceOf(RedisUnavailableError);
  await cut;
  expect(await holdCounts(lock.key)).toEqual(['1']);
}

/** The hold counts in a lock hash (every field but its `kind`). */
const holdCounts = async (key: string): Promise<string[]> =>
  Object.entries(await env.redis.hGetAll(key)).flatMap(([field, value]) => (field === 'kind' ? [] : [value]));

/** Resolves once the lock client can reach Redis again. */
const reachable = (lock: RLock): Promise<unknown> => waitUntil(() => lock.isLocked().then(() => true, () => false), 10_000, 20, 'Redis to be reachable again');

describe('a grant whose reply was lost', () => {
  for (const [kind, make, script, reply] of KINDS) {
    it(`${kind}, in a context: the next acquisition adopts it (hold count 1), and one unlock frees the key`, async () => {
      const { proxy: p, client: c } = await throughProxy();
      const lock = make(c, `{${uniqueName()}}`);
      await runInContext(async () => {
        await loseGrant(p, lock, script, reply);
        await reachable(lock);
        expect(await lock.tryLock(3, 'seconds')).toBe(true);
        expect(await lock.getHoldCount()).toBe(1);
        await lock.unlock();
      });
      expect(await env.redis.exists(lock.key)).toBe(0);
    });

    it(`${kind}, outside any context: it is released once Redis answers again; the next acquisition gets the lock with hold count 1`, async () => {
      const { proxy: p, client: c } = await throughProxy();
      const lock = make(c, `{${uniqueName()}}`);
      await loseGrant(p, lock, script, reply);
      await waitUntil(async () => (await env.redis.exists(lock.key)) === 0, 10_000, 20, 'the lost grant to be released');
      expect(await lock.tryLock(3, 'seconds')).toBe(true);
      expect(await lock.getHoldCount()).toBe(1);
      await lock.unlock();
      expect(await env.redis.exists(lock.key)).toBe(0);
    });
  }

  it('a handle from acquire() outside any context: the lost grant is released, and the next handle holds the lock alone', async () => {
    const { proxy: p, client: c } = await throughProxy();
    const lock = c.getLock(`{${uniqueName()}}`);
    await env.redis.scriptLoad(ACQUIRE.source);
    const cut = p.loseReply({ match: ACQUIRE.sha, replyPrefix: NIL, refuseMs: REFUSE_MS });
    await expect(lock.acquire({ waitTime: 0, unit: 'ms' })).rejects.toBeInstanceOf(RedisUnavailableError);
    await cut;
    await waitUntil(async () => (await env.redis.exists(lock.key)) === 0, 10_000, 20, 'the lost grant to be released');
    const handle = await lock.acquire({ waitTime: 3, unit: 'seconds' });
    expect(await holdCounts(lock.key)).toEqual(['1']);
    await handle.release();
    expect(await env.redis.exists(lock.key)).toBe(0);
  });
});

describe('a lost grant to an owner whose hold had ended without its knowing', () => {
  for (const [kind, make, script, reply] of KINDS) {
    it(`${kind}: the retry recognises its own grant (hold count 1, not 2), the ended hold is reported lost, and one unlock frees the key`, async () => {
      proxy = await startProxy('127.0.0.1', env.server.port);
      const c = (client = createLockClient({ url: `redis://127.0.0.1:${proxy.port}` }));
      const p = proxy;
      const lock = make(c, `{${uniqueName()}}`);
      const lost: string[] = [];
      c.on('lockLost', (e) => lost.push(e.reason));
      await runInContext(async () => {
        await lock.lock();
        // The hold ends without the client knowing (a restart without persistence, an early expiry): it
        // still counts one hold, and the watchdog has not renewed since.
        await env.redis.del(lock.key);
        await env.redis.scriptLoad(script.source);
        const cut = p.loseReply({ match: script.sha, replyPrefix: reply });
        expect(await lock.tryLock(3, 'seconds')).toBe(true);
        await cut;
        expect(await holdCounts(lock.key)).toEqual(['1']);
        expect(await lock.getHoldCount()).toBe(1);
        expect(lost).toEqual(['expired']);
        await lock.unlock();
      });
      expect(await env.redis.exists(lock.key)).toBe(0);
    });
  }
});

describe('an owner whose hold ended without its knowing, while another owner holds the lock', () => {
  for (const [kind, make] of KINDS) {
    it(`${kind}: its next acquisition is refused, not granted beside the new holder; the ended hold is reported lost`, async () => {
      const a = lockClient(env.redis);
      const b = lockClient(env.redis);
      const name = `{${uniqueName()}}`;
      const lock = make(a, name);
      const lost: string[] = [];
      a.on('lockLost', (e) => lost.push(e.reason));
      await runInContext(async () => {
        await lock.lock();
        // The hold ends without A's client knowing (an early expiry, a restart without persistence), and
        // B takes the lock before A's watchdog would notice: A's client still counts one hold.
        await env.redis.del(lock.key);
        const held = await make(b, name).acquire({ leaseTime: 30, unit: 'seconds' });
        // The acquire script answers 'lost' (A's count is 0 in Redis, the client sent 1): the client
        // forgets the ended hold and asks again with 0, and B's hold refuses it.
        expect(await lock.tryLock()).toBe(false);
        expect(await holdCounts(lock.key)).toEqual(['1']);
        expect(await env.redis.hGet(lock.key, held.owner)).toBe('1');
        expect(await lock.getHoldCount()).toBe(0);
        expect(lost).toEqual(['expired']);
        await held.release();
      });
    });
  }
});
