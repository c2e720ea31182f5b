/**
 * RReadWriteLock's reads are idempotent calls: a reply lost on the way back (the script ran, the socket
 * closed before its answer came) is sent again, and the caller gets the answer, not an error.
 */
import { expect, it } from '@jest/globals';
import { RW_IS_LOCKED } from '../../src/read-write-lock/scripts.js';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName } from '../support/helpers.js';
import { useProxied } from '../lock/protocol/engine.js';

const env = useRedis();
const proxied = useProxied(env);

it('isLocked of either side, its reply lost once: retried, answers true for the held read side and false for the free write side', async () => {
  const name = uniqueName('rw-reads');
  const read = await lockClient(env.redis).getReadWriteLock(name).readLock().acquire({ leaseMs: 30_000 });
  const { proxy, client } = await proxied();
  await env.redis.scriptLoad(RW_IS_LOCKED.source);
  const rw = client.getReadWriteLock(name);
  for (const [side, held] of [[rw.readLock(), true], [rw.writeLock(), false]] as const) {
    const lost = proxy.loseReply({ match: RW_IS_LOCKED.sha });
    expect(await side.isLocked()).toBe(held);
    await lost;
  }
  expect(proxy.repliesLost).toBe(2);
  await read.release();
});
