import { describe, expect, it } from '@jest/globals';
import { InvalidArgumentError, KeyspaceEventsUnavailableError } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { connect, lockClient, uniqueName, waitUntil } from '../support/helpers.js';

const env = useRedis();

/** Issue 20: Redisson's lock listeners (`expired`, `deleted`) through Redis keyspace notifications. */
describe('RLock.addListener', () => {
  it('with notifications off: KeyspaceEventsUnavailableError (reason disabled), nothing subscribed', async () => {
    await env.redis.configSet('notify-keyspace-events', '');
    const lock = lockClient(env.redis).getLock(uniqueName());
    const error = await lock.addListener('expired', () => {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KeyspaceEventsUnavailableError);
    expect((error as KeyspaceEventsUnavailableError).reason).toBe('disabled');
    await env.redis.configSet('notify-keyspace-events', 'Kx');
    await expect(lock.addListener('deleted', () => {})).rejects.toBeInstanceOf(KeyspaceEventsUnavailableError);
    await expect(lock.addListener('gone' as 'expired', () => {})).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await env.redis.pubSubNumSub(`__keyspace@0__:${lock.key}`)).toEqual({ [`__keyspace@0__:${lock.key}`]: 0 });
  });

  it('CONFIG GET refused (an ACL user without CONFIG): reason config-refused; any other failure of the check is passed on as it is', async () => {
    const user = uniqueName('nocfg');
    await env.redis.sendCommand(['ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', '-config']);
    const limited = await connect(env.server.url, { username: user, password: 'pw' });
    try {
      const refused = await lockClient(limited).getLock(uniqueName()).addListener('expired', () => {}).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(KeyspaceEventsUnavailableError);
      expect(refused).toMatchObject({ reason: 'config-refused' });
    } finally {
      await limited.close();
      await env.redis.sendCommand(['ACL', 'DELUSER', user]);
    }
    // A connection that is gone is not "notifications unavailable": the caller sees the connection's failure.
    const gone = await connect(env.server.url);
    const lock = lockClient(gone).getLock(uniqueName());
    await gone.close();
    const failure = await lock.addListener('expired', () => {}).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(Error);
    expect(failure).not.toBeInstanceOf(KeyspaceEventsUnavailableError);
  });

  it('with notifications on: expired when a lease runs out, deleted at the last unlock and at forceUnlock, in another client', async () => {
    await env.redis.configSet('notify-keyspace-events', 'Kgx');
    const name = uniqueName();
    const watcher = lockClient(env.redis).getLock(name);
    const seen: string[] = [];
    const expiredId = await watcher.addListener('expired', (n) => seen.push(`expired ${n}`));
    const deletedId = await watcher.addListener('deleted', (n) => seen.push(`deleted ${n}`));
    const holder = lockClient(env.redis).getLock(name);
    await holder.lock(150, 'ms');
    await waitUntil(() => seen.length === 1, 3000, 10, 'the expired event');
    expect(seen).toEqual([`expired ${name}`]);
    await holder.lock();
    await holder.unlock();
    await waitUntil(() => seen.length === 2, 3000, 10, 'the deleted event');
    await holder.lock();
    await holder.forceUnlock();
    await waitUntil(() => seen.length === 3, 3000, 10, 'the second deleted event');
    expect(seen.slice(1)).toEqual([`deleted ${name}`, `deleted ${name}`]);
    await watcher.removeListener(expiredId);
    await watcher.removeListener(deletedId);
    await watcher.removeListener(12345);
    // A listener added afterwards sees the next events; the removed ones, on the same connection before it, do not.
    const later: string[] = [];
    await watcher.addListener('deleted', (n) => later.push(n));
    await holder.lock(50, 'ms');
    await waitUntil(async () => (await env.redis.exists(name)) === 0, 3000, 10, 'the lease to end');
    await holder.lock();
    await holder.unlock();
    await waitUntil(() => later.length === 1, 3000, 10, 'the later listener');
    expect(seen).toHaveLength(3);
  });
});
