/**
 * The engine's hooks (src/lock/protocol/hooks.ts: types and `ignore` only) as the engine uses them, against
 * a real redis-server: a variant configures the engine through them alone. The fenced lock's grant shape
 * (`Grant.token`, from its `runAcquire`) reaches the caller through the engine's `acquire`; the wait hooks
 * (`beginWait`, `endWait`) frame every call, told its wait time and whether it got the lock.
 */
import { describe, expect, it } from '@jest/globals';
import { acquire } from '../../../src/lock/protocol/acquire.js';
import { unlock } from '../../../src/lock/protocol/unlock.js';
import { useRedis } from '../../support/harness.js';
import { lockClient, uniqueName } from '../../support/helpers.js';
import { newContext, spy } from './engine.js';

const env = useRedis();

describe('LockHooks (protocol/hooks.ts) as the engine uses them', () => {
  it("the fenced lock's grant shape: each grant carries its token, increasing", async () => {
    const fenced = lockClient(env.redis).getFencedLock(`{${uniqueName('hooks')}}`);
    const first = newContext();
    const a = await acquire(fenced, first, 0, undefined, undefined);
    await unlock(fenced, first);
    const b = await acquire(fenced, newContext(), 0, 5000, undefined);
    expect(typeof a?.grant.token).toBe('bigint');
    expect(b!.grant.token! > a!.grant.token!).toBe(true);
    await unlock(fenced, b!.ctx);
    expect(await env.redis.exists(fenced.key)).toBe(0);
  });

  it('beginWait and endWait frame every call, with its wait time and whether it got the lock', async () => {
    const hooks = spy(lockClient(env.redis).getLock(`{${uniqueName('hooks')}}`));
    const calls: unknown[] = [];
    const framed = Object.assign(Object.create(hooks) as typeof hooks, {
      beginWait: (owner: string, waitMs: number) => void calls.push(['begin', owner === framed.ownerOf(holder), waitMs]),
      endWait: (owner: string, waitMs: number, granted: boolean) => void calls.push(['end', owner === framed.ownerOf(holder), waitMs, granted]),
    });
    const holder = newContext();
    await acquire(framed, holder, 0, undefined, undefined);
    expect(await acquire(framed, newContext(), 0, undefined, undefined)).toBeUndefined();
    expect(calls).toEqual([
      ['begin', true, 0],
      ['end', true, 0, true],
      ['begin', false, 0],
      ['end', false, 0, false],
    ]);
    await unlock(framed, holder);
  });
});
