/**
 * The `relock:acquire` and `relock:release` TracingChannels and the `relock:lost` channel, as an APM agent
 * subscribes to them, with OpenTelemetry off (`otel: false`): events and their messages for a grant, a
 * timeout, an abort, a release, a release of a hold that was gone, and a lost hold.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { channel, tracingChannel, type TracingChannelSubscribers } from 'node:diagnostics_channel';
import { IllegalMonitorStateError, type LockLostEvent, type LostMessage } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName } from '../support/helpers.js';

const env = useRedis();

type Event = [string, Record<string, unknown>];

/** Subscribes to every event of the TracingChannel `name`, recording [event, copy of the message]. */
function record(name: string, events: Event[]): () => void {
  const on = (event: string) => (message: unknown) => events.push([event, { ...(message as object) }]);
  const subscribers: TracingChannelSubscribers<object> = { start: on('start'), end: on('end'), asyncStart: on('asyncStart'), asyncEnd: on('asyncEnd'), error: on('error') };
  tracingChannel(name).subscribe(subscribers);
  return () => tracingChannel(name).unsubscribe(subscribers);
}

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((cleanup) => cleanup()));

describe('diagnostics_channel', () => {
  it('relock:acquire and relock:release publish start, end, asyncStart, asyncEnd and error with the documented messages', async () => {
    const acquires: Event[] = [];
    const releases: Event[] = [];
    cleanups.push(record('relock:acquire', acquires), record('relock:release', releases));
    const relock = lockClient(env.redis, { otel: false });
    const name = uniqueName('dc');
    const lock = relock.getLock(name);

    const held = await lock.acquire();
    expect(await relock.getLock(name).tryLock(20, 'ms')).toBe(false);
    const aborter = new AbortController();
    const aborted = lock.acquire({ signal: aborter.signal });
    setTimeout(() => aborter.abort(new Error('stop')), 20);
    await expect(aborted).rejects.toThrow('stop');
    await held.release();
    // In a context that holds nothing, so that the release reaches Redis (outside one, this task's unlock would be
    // refused before it starts: OwnerUnknownError, it took nothing contextless).
    await expect(relock.runInContext(() => lock.unlock())).rejects.toThrow(IllegalMonitorStateError);

    const base = { kind: 'lock', name };
    expect(acquires).toEqual([
      ['start', { ...base, waitMs: Infinity }],
      ['end', { ...base, waitMs: Infinity }],
      ['asyncStart', { ...base, waitMs: Infinity, outcome: 'acquired', attempts: 1, wokenBy: 'none', result: { sentAt: expect.any(Number) } }],
      ['asyncEnd', { ...base, waitMs: Infinity, outcome: 'acquired', attempts: 1, wokenBy: 'none', result: { sentAt: expect.any(Number) } }],
      ['start', { ...base, waitMs: 20 }],
      ['end', { ...base, waitMs: 20 }],
      ['asyncStart', expect.objectContaining({ ...base, outcome: 'timeout', result: undefined })],
      ['asyncEnd', expect.objectContaining({ ...base, outcome: 'timeout' })],
      ['start', { ...base, waitMs: Infinity }],
      ['end', { ...base, waitMs: Infinity }],
      ['error', expect.objectContaining({ ...base, outcome: 'aborted', error: new Error('stop') })],
      ['asyncStart', expect.objectContaining({ outcome: 'aborted' })],
      ['asyncEnd', expect.objectContaining({ outcome: 'aborted' })],
    ]);
    expect(releases.map(([event]) => event)).toEqual(['start', 'end', 'asyncStart', 'asyncEnd', 'start', 'end', 'error', 'asyncStart', 'asyncEnd']);
    expect(releases[2]![1]).toMatchObject({ ...base, heldMs: expect.any(Number) });
    expect(releases[6]![1]).toMatchObject({ ...base, error: expect.any(IllegalMonitorStateError) });
  });

  it('relock:lost carries the kind, name, key, owner and reason of a lost hold', async () => {
    const messages: LostMessage[] = [];
    const onLost = (message: unknown): void => void messages.push(message as LostMessage);
    channel('relock:lost').subscribe(onLost);
    cleanups.push(() => channel('relock:lost').unsubscribe(onLost));
    const relock = lockClient(env.redis, { otel: false, lockWatchdogTimeout: 300 });
    const name = uniqueName('dc-lost');
    const handle = await relock.getFencedLock(name).acquire();
    const lost = new Promise<LockLostEvent>((resolve) => relock.once('lockLost', resolve));
    await env.redis.del(name);
    const event = await lost;
    expect(messages).toEqual([{ kind: 'fenced_lock', name, key: name, owner: handle.owner, reason: 'expired' }]);
    expect(event.owner).toBe(handle.owner);
  });

  it('publishes nothing and keeps no state while nobody subscribed', async () => {
    const relock = lockClient(env.redis, { otel: false });
    const lock = relock.getLock(uniqueName('dc-idle'));
    await (await lock.acquire()).release();
    expect((relock as unknown as { core: { observe: { holds: Map<string, unknown> } } }).core.observe.holds.size).toBe(0);
    expect(tracingChannel('relock:acquire').start.hasSubscribers).toBe(false);
  });
});
