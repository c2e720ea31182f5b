/**
 * `RLeaderElection` on a real Redis: loss (the leadership's signal), the `run()` loop, shutdown, bad
 * options, the kind check, and its OpenTelemetry metrics. The contract on every client and topology is in
 * test/contract/leader-job.ts; the 5-process fault scenario is `npm run faults -- --only leader-election`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { getEventListeners } from 'node:events';
import pino from 'pino';
import { createClient } from 'redis';
import { createLockClient, InvalidArgumentError, LeadershipEndedError, LockLostError, WrongTypeError, type Leadership, type LockClient, type LockClientOptions } from '../../src/index.js';
import { LEADER_ACQUIRE } from '../../src/leader-election/scripts.js';
import { point, observerReady, TestSdk } from '../observe/otel-support.js';
import { useRedis } from '../support/harness.js';
import { commandCalls, lockClient, uniqueName, waitUntil } from '../support/helpers.js';
import { stallTolerant } from '../support/stalls.js';
import { startProxy } from '../support/tcp-proxy.js';
import { freePort } from '../support/redis.js';

const env = useRedis();

/**
 * A lock client of an unreachable Redis (a free port), over a node-redis client the test owns that tries
 * again every 50 ms; `close()` shuts the lock client down and destroys it. A client relock makes for `url`
 * keeps node-redis's default reconnect delay (up to 2.2 s, a timer node-redis cannot cancel), which kept
 * the jest worker alive after its last file ("A worker process has failed to exit gracefully").
 */
async function unreachable(options: Omit<LockClientOptions, 'redis' | 'url'>): Promise<{ client: LockClient; close: () => Promise<void> }> {
  const redis = createClient({ url: `redis://127.0.0.1:${await freePort()}`, disableOfflineQueue: true, socket: { reconnectStrategy: () => 50 } });
  redis.on('error', () => {});
  redis.connect().catch(() => {});
  const client = createLockClient({ redis, ...options });
  return {
    client,
    close: async () => {
      await client.shutdown();
      redis.destroy();
    },
  };
}
let sdk: TestSdk;
beforeAll(() => {
  sdk = new TestSdk();
});
afterAll(() => sdk.close());

describe('RLeaderElection', () => {
  it('a leader whose key is gone is told by its signal (reason lost) within one renewal interval; a waiting campaigner is elected with a greater term', async () => {
    const name = uniqueName('elect');
    const a = lockClient(env.redis, { lockWatchdogTimeout: 600 }).getLeaderElection(name, { identity: 'a' });
    const b = lockClient(env.redis, { lockWatchdogTimeout: 600 }).getLeaderElection(name, { identity: 'b' });
    const first = await a.campaign();
    const second = b.campaign();
    await env.redis.del(name);
    const next = await second;
    await waitUntil(() => first.signal.aborted, 1000, 5, 'the first leadership to end');
    expect(first.signal.reason).toBeInstanceOf(LeadershipEndedError);
    expect((first.signal.reason as LeadershipEndedError).reason).toBe('lost');
    expect((first.signal.reason as LeadershipEndedError).cause).toBeInstanceOf(LockLostError);
    expect(next.term).toBeGreaterThan(first.term);
    await first.resign();
    expect(await b.leader()).toMatchObject({ identity: 'b', term: next.term });
    await next.resign();
  });

  it('a campaign whose granted reply was lost: the retry recognises its own grant (hold count 1, term 1), and resign frees the key', async () => {
    const proxy = await startProxy('127.0.0.1', env.server.port);
    const client = createLockClient({ url: `redis://127.0.0.1:${proxy.port}` });
    try {
      const name = uniqueName('elect');
      await env.redis.scriptLoad(LEADER_ACQUIRE.source);
      // The reply of the granted campaign (`{1, term}`) is dropped and its connection reset: the
      // campaign ran, its caller retries with the guard of its hold count (0) and must find its own grant.
      const cut = proxy.loseReply({ match: LEADER_ACQUIRE.sha, replyPrefix: '*2\r\n:1\r\n' });
      const leadership = await client.getLeaderElection(name, { identity: 'a' }).campaign();
      await cut;
      expect(proxy.repliesLost).toBe(1);
      const { kind, leader, term, ...holds } = await env.redis.hGetAll(name);
      expect({ term: leadership.term, kind, leader, stored: term, holds: Object.values(holds) }).toEqual({ term: 1n, kind: 'leader-election', leader: 'a', stored: '1', holds: ['1'] });
      await leadership.resign();
      expect(await env.redis.exists(name)).toBe(0);
    } finally {
      await client.shutdown();
      await proxy.close();
    }
  });

  it('a campaign while another leads is refused and parks on a channel (a few scripts, no loop), until its signal aborts it', async () => {
    const name = uniqueName('elect');
    const a = lockClient(env.redis).getLeaderElection(name, { identity: 'a' });
    const b = lockClient(env.redis).getLeaderElection(name, { identity: 'b' });
    const leading = await a.campaign();
    const before = await commandCalls(env.redis, 'evalsha');
    const controller = new AbortController();
    const waiting = b.campaign({ signal: controller.signal });
    // Parked: subscribed to the election's channel. A refusal read as an ended hold would retry at once, forever.
    await waitUntil(async () => ((await env.redis.sendCommand(['PUBSUB', 'CHANNELS', `*{${name}}*`])) as string[]).length > 0, 2000, 5, 'the campaign to park');
    expect(await commandCalls(env.redis, 'evalsha')).toBeLessThanOrEqual(before + 3);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    expect(await b.leader()).toMatchObject({ identity: 'a', term: leading.term });
    await leading.resign();
  });

  it('run() runs fn while leading, campaigns again after a loss, and ends (resigning) when its signal aborts', async () => {
    const name = uniqueName('elect');
    const election = lockClient(env.redis, { lockWatchdogTimeout: 600 }).getLeaderElection(name);
    const stop = new AbortController();
    const terms: bigint[] = [];
    const running = election.run(async (leadership: Leadership) => {
      terms.push(leadership.term);
      if (terms.length === 1) await env.redis.del(name);
      await new Promise((resolve) => leadership.signal.addEventListener('abort', resolve, { once: true }));
    }, { signal: stop.signal });
    await waitUntil(() => terms.length === 2, 3000, 5, 'a second leadership after the loss');
    expect(terms[1]).toBeGreaterThan(terms[0]);
    stop.abort();
    await running;
    expect(await env.redis.exists(name)).toBe(0);
  });

  it('shutdown() ends the leadership (lost, cause shutdown) and run() resolves', async () => {
    const client = lockClient(env.redis);
    const election = client.getLeaderElection(uniqueName('elect'));
    let leadership: Leadership | undefined;
    const running = election.run(async (l) => {
      leadership = l;
      await new Promise((resolve) => l.signal.addEventListener('abort', resolve, { once: true }));
    });
    await waitUntil(() => leadership !== undefined, 3000, 5, 'leadership');
    await client.shutdown();
    await running;
    expect(((leadership!.signal.reason as LeadershipEndedError).cause as LockLostError).reason).toBe('shutdown');
  });

  // A campaign that finds Redis unreachable pauses a second (RETRY_PAUSE_MS) before the next one; an abort
  // during the pause ends run() at once. The abort comes from the logger's line 'campaign failed', which
  // run() writes just before the pause: in the same synchronous run (the pause must see the signal already
  // aborted) or in the microtask after it (the pause must hear the abort event). Either way run() resolves
  // well before the second is up (600 ms allowed; with the pause deaf to the abort it takes the full 1,000).
  it.each([
    ['aborted as the failure is logged', (abort: () => void) => abort()],
    ['aborted just after, during the pause', (abort: () => void) => queueMicrotask(abort)],
  ])('run() on an unreachable Redis, %s: resolves at once, not after the pause', async (_, when) => {
    // run() ends within ms of the abort, against a bound of 600 ms: a round that failed while this process's
    // loop stalled past 400 ms (stallTolerant; loop only: Redis is unreachable) is repeated, up to 3 rounds,
    // with a fresh client and name; a pause deaf to the abort takes its full 1,000 ms, every round.
    await stallTolerant(async () => {
      const stop = new AbortController();
      let abortedAt = 0;
      const logger = pino({ level: 'warn' }, {
        write: (line: string) => {
          if (!line.includes('campaign failed') || stop.signal.aborted) return;
          when(() => {
            abortedAt = performance.now();
            stop.abort();
          });
        },
      });
      const { client, close } = await unreachable({ responseTimeout: 200, retry: { retries: 0 }, logger });
      try {
        await client.getLeaderElection(uniqueName('elect')).run(() => undefined, { signal: stop.signal });
        expect(abortedAt).toBeGreaterThan(0);
        expect(performance.now() - abortedAt).toBeLessThan(600);
      } finally {
        await close();
      }
    }, 400);
  });

  // Each pause listens to the run's signal and to the client's shutdown signal, and stops listening when it
  // ends: three failed campaigns in a row leave no listener behind on the user's signal (a pause that kept
  // its listener would add one a second for as long as Redis is down).
  it('run() on an unreachable Redis: the pauses between campaigns leave no listener on the signal', async () => {
    const stop = new AbortController();
    const listening: number[] = [];
    const logger = pino({ level: 'warn' }, {
      write: (line: string) => {
        if (!line.includes('campaign failed')) return;
        listening.push(getEventListeners(stop.signal, 'abort').length);
        if (listening.length === 3) stop.abort();
      },
    });
    const { client, close } = await unreachable({ responseTimeout: 100, retry: { retries: 0 }, logger });
    try {
      await client.getLeaderElection(uniqueName('elect')).run(() => undefined, { signal: stop.signal });
      expect(listening).toEqual([0, 0, 0]);
    } finally {
      await close();
    }
  });

  it('refuses bad and unknown options with InvalidArgumentError, and a name of another kind with WrongTypeError', async () => {
    const client = lockClient(env.redis);
    const name = uniqueName('elect');
    expect(() => client.getLeaderElection(name, { identity: '' })).toThrow(InvalidArgumentError);
    expect(() => client.getLeaderElection(name, { idenity: 'x' } as never)).toThrow(/options\.idenity/);
    const election = client.getLeaderElection(name);
    await expect(election.campaign({ signl: 1 } as never)).rejects.toThrow(/signl/);
    await expect(election.run('x' as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    const held = await client.getLock(name).acquire();
    await expect(election.leader()).rejects.toBeInstanceOf(WrongTypeError);
    await expect(election.campaign({ signal: AbortSignal.timeout(2000) })).rejects.toBeInstanceOf(WrongTypeError);
    await held.release();
    // A read-write lock's hash has no kind field: the campaign names it by its mode field, a foreign hash as data.
    const rw = await client.getReadWriteLock(name).writeLock().acquire();
    await expect(election.campaign({ signal: AbortSignal.timeout(2000) })).rejects.toMatchObject({ name: 'WrongTypeError', foundKind: 'read-write-lock' });
    await rw.release();
    await env.redis.hSet(name, 'field', 'value');
    await expect(election.campaign({ signal: AbortSignal.timeout(2000) })).rejects.toMatchObject({ name: 'WrongTypeError', foundKind: undefined });
    await env.redis.del(name);
    expect(election.identity).toBe(`${(await import('node:os')).hostname()}:${process.pid}`);
  });

  it('records relock.leader.changes and the relock.leader.is_leader gauge per election', async () => {
    const client = lockClient(env.redis, { otel: { meterProvider: sdk.meterProvider } });
    await observerReady(client);
    const name = uniqueName('elect');
    const leadership = await client.getLeaderElection(name).campaign();
    let metrics = await sdk.metrics();
    expect(point(metrics.get('relock.leader.is_leader'), { 'relock.election': name })).toBe(1);
    expect(point(metrics.get('relock.leader.changes'), { 'relock.election': name, 'relock.change': 'elected' })).toBe(1);
    await leadership.resign();
    metrics = await sdk.metrics();
    expect(point(metrics.get('relock.leader.is_leader'), { 'relock.election': name })).toBe(0);
    expect(point(metrics.get('relock.leader.changes'), { 'relock.election': name, 'relock.change': 'resigned' })).toBe(1);
  });
});
