/**
 * The Valkey GLIDE 2 traits relock's adapter deals with (`GlideClient` on standalone Redis,
 * `GlideClusterClient` on a Cluster): reply shapes, error forms, routing, its own subscriber, the user's
 * client left open, reconnects, no dynamic subscribe; and the unlock→waiter hand-off latency next to
 * node-redis's on the same deployment. The acceptance items and the contract are in glide.test.ts and
 * glide-cluster.test.ts.
 */
import { describe, expect, it, jest } from '@jest/globals';
import { ClientClosedError, createLockClient, InvalidArgumentError, WrongTypeError, type LockClient, type RLock } from '../../src/index.js';
import { useClusterTopology, useStandaloneTopology, type Topology } from '../shared/topology.js';
import { glide as glideAdapter, glideError } from '../../src/redis/clients/glide.js';
import { ResponseTimeoutError } from '../../src/redis/failures.js';
import { Decoder, GlideClient, TimeoutError } from '@valkey/valkey-glide';
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { GLIDE, type OpenedClient } from '../shared/clients.js';
import { pino } from 'pino';
import { useRedis } from '../support/harness.js';
import { callsSince, commandCalls, numsub, sleep, uniqueName, waitUntil, Worker } from '../support/helpers.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';
import { recordAcquisitions } from '../support/wakes.js';

/** A name of one test's own, with a hash tag: its key and channel are in one slot. */
const newName = (): string => `glide:{${uniqueName()}}`;

/**
 * Milliseconds from the holder's unlock call to the waiter's acquisition, the waiter subscribed and
 * parked first (the holder's lease is 30 s: only the unlock message can wake it this soon).
 */
async function handOff(t: Topology, holder: LockClient, waiter: LockClient): Promise<{ elapsed: number; lock: RLock }> {
  const name = newName();
  const held = await holder.getLock(name).acquire({ leaseTime: 30_000, unit: 'ms' });
  const lock = waiter.getLock(name);
  const waiting = lock.acquire({ waitTime: 20_000, leaseTime: 30_000, unit: 'ms' });
  await waitUntil(async () => (await t.subscribers(lock.channel)) === 1, 5000, 2, 'the waiter to subscribe');
  const start = performance.now();
  await held.release();
  const handle = await waiting;
  const elapsed = performance.now() - start;
  await handle.release();
  return { elapsed, lock };
}

/** The traits on one topology; `base` is the same deployment with node-redis lock clients. */
function traits(topology: () => Topology, base: () => Topology): void {
  const t = topology;
  // The user's own GLIDE client of the tests that need it (beside the topology's).
  let user: OpenedClient | undefined;
  beforeAll(async () => {
    const [seed] = t().seeds;
    user = t().name.startsWith('cluster') ? await GLIDE.cluster(seed!.port) : await GLIDE.standalone(`redis://${seed!.host}:${seed!.port}`);
  }, 30_000);
  afterAll(() => user?.close());
  const setup = { glide: () => user!.client as GlideClient };

  it('names the holding kind in a WrongTypeError (GLIDE reformats server errors; relock restores them)', async () => {
    const c = t().client();
    const name = newName();
    const semaphore = c.getSemaphore(name);
    await semaphore.trySetPermits(1);
    const error = await c.getLock(name).tryLock(0, 5, 'seconds').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WrongTypeError);
    expect(error).toMatchObject({ foundKind: 'semaphore', askedKind: 'lock' });
    await t().redis.del(semaphore.key);
  });

  it('runs scripts again after SCRIPT FLUSH (NOSCRIPT falls back to EVAL)', async () => {
    const c = t().client();
    const lock = c.getLock(newName());
    expect(await lock.tryLock(0, 5, 'seconds')).toBe(true);
    await t().command(lock.key, ['SCRIPT', 'FLUSH']);
    await lock.unlock();
    expect(await t().redis.exists(lock.key)).toBe(0);
  });

  it('shutdown closes relock\'s subscriber and leaves the user\'s GLIDE client open', async () => {
    const name = newName();
    const c = createLockClient({ redis: setup.glide() });
    const held = await t().client().getLock(name).acquire({ leaseTime: 30_000, unit: 'ms' });
    const lock = c.getLock(name);
    const waiting = lock.tryLock(20, 30, 'seconds').catch((error: unknown) => error);
    await waitUntil(async () => (await t().subscribers(lock.channel)) === 1, 5000, 2, 'the waiter to subscribe');
    await c.shutdown();
    expect(await waiting).toBeInstanceOf(ClientClosedError);
    await waitUntil(async () => (await t().subscribers(lock.channel)) === 0, 5000, 5, 'the subscriber to close');
    expect(await setup.glide().customCommand(['PING'])).toBe('PONG');
    await held.release();
  });

  it('routes keyless commands to the slot\'s primary and gives map replies in the RESP2 shape', async () => {
    const connection = glideAdapter.open(setup.glide(), () => {});
    const channel = `relock:channel:${newName()}`;
    const verb = connection.topology === 'cluster' ? 'SHARDNUMSUB' : 'NUMSUB';
    const messages: string[] = [];
    await connection.subscribe(channel, (message) => messages.push(message));
    // Five times: a command sent to a random node of the six would see no subscriber most of the time.
    for (let i = 0; i < 5; i++) expect(await connection.sendKeyless(channel, ['PUBSUB', verb, channel])).toEqual([channel, 1]);
    // GLIDE's own routing would send INFO to every node and answer with one reply per node.
    const runId = (info: unknown): string | undefined => /^run_id:(\w+)/m.exec(String(info))?.[1];
    const info = await connection.sendKeyless(channel, ['INFO', 'server']);
    expect(typeof info).toBe('string'); // one node's reply, not one per node
    expect(runId(info)).toBe(runId(await t().command(channel, ['INFO', 'server'])));
    await connection.send(channel, [connection.publishCommand.toUpperCase(), channel, 'hello']);
    await waitUntil(() => messages.length === 1, 5000, 2, 'the message');
    expect(messages).toEqual(['hello']);
    await connection.unsubscribe(channel, () => {});
    expect(await connection.sendKeyless(channel, ['PUBSUB', verb, channel])).toEqual([channel, 1]);
    await connection.close();
    await waitUntil(async () => (await t().subscribers(channel)) === 0, 5000, 5, 'the subscriber to close');
  });

  it("checks its subscriber's subscriptions every second only while a channel is subscribed: none after the last unsubscribe", async () => {
    const user = setup.glide();
    const UserClass = user.constructor as unknown as { createClient(config: unknown): Promise<GlideClient> };
    const made = jest.spyOn(UserClass, 'createClient');
    const checks = jest.spyOn(Object.getPrototypeOf(user) as GlideClient, 'getSubscriptions');
    try {
      const connection = glideAdapter.open(user, () => {});
      const channel = `relock:channel:${newName()}`;
      const listener = (): void => {};
      await connection.subscribe(channel, listener);
      const subscriber = await (made.mock.results[0]!.value as Promise<GlideClient>);
      const own = (): number => checks.mock.contexts.filter((context) => context === subscriber).length;
      await waitUntil(() => own() >= 1, 5000, 10, "the subscriber's first check");
      await connection.unsubscribe(channel, listener);
      const after = own();
      await sleep(2500); // two and a half check intervals (1 s): the mutant that keeps the timer checks twice more
      expect(own()).toBe(after);
      await connection.close();
    } finally {
      made.mockRestore();
      checks.mockRestore();
    }
  });

  it('measures the unlock→waiter hand-off on GLIDE and on node-redis (20 rounds each)', async () => {
    const on = t();
    const glide = [on.client(), on.client()] as const;
    const node = [base().client(), base().client()] as const;
    const rounds = async (holder: LockClient, waiter: LockClient): Promise<number[]> => {
      const times: number[] = [];
      for (let i = 0; i < 20; i++) times.push((await handOff(on, holder, waiter)).elapsed);
      return times.sort((a, b) => a - b);
    };
    const onGlide = await rounds(...glide);
    const onNode = await rounds(...node);
    const summary = (times: number[]): string => `p50 ${times[10]!.toFixed(2)} ms, max ${times[19]!.toFixed(2)} ms`;
    console.info(`hand-off on ${on.name}: GLIDE ${summary(onGlide)}; node-redis ${summary(onNode)}`);
    expect(onGlide[19]).toBeLessThan(1000);
  });
}

describe('GLIDE on standalone Redis', () => {
  const topology = useStandaloneTopology({ family: GLIDE });
  traits(topology, () => ({ ...topology(), client: (options) => nodeRedisClient(topology(), options) }));
});
describe('GLIDE on Redis Cluster', () => {
  const { topology } = useClusterTopology(GLIDE);
  traits(topology, () => ({ ...topology(), client: (options) => nodeRedisClient(topology(), options) }));
});

/** Lock clients on the topology's node-redis client, for the comparison (shut down after each test). */
const nodeRedisClients: LockClient[] = [];
function nodeRedisClient(t: Topology, options?: Parameters<Topology['client']>[0]): LockClient {
  const client = createLockClient({ redis: t.redis as object, ...options });
  nodeRedisClients.push(client);
  return client;
}
afterEach(async () => {
  await Promise.all(nodeRedisClients.splice(0).map((c) => c.shutdown()));
});

describe("GLIDE's errors as relock classifies them", () => {
  it("a GLIDE TimeoutError is a ResponseTimeoutError (ambiguous: retried only when idempotent); an error-like value without a constructor is passed on as it is", () => {
    const timeout = glideError(new TimeoutError('timed out'));
    expect(timeout).toBeInstanceOf(ResponseTimeoutError);
    expect((timeout as Error).message).toBe("no reply from Redis within the GLIDE client's requestTimeout (timed out)");
    const bare = Object.assign(Object.create(null) as object, { message: 'no prototype' });
    expect(glideError(bare)).toBe(bare);
  });
});

describe('recognising a GLIDE client', () => {
  it('refuses a GLIDE-looking object without createClient, naming what it lacks', () => {
    const fake = { customCommand: async () => 'OK', getPubSubMessage: async () => null, close: () => {}, constructor: {} };
    expect(() => createLockClient({ redis: fake })).toThrow(InvalidArgumentError);
    expect(() => createLockClient({ redis: fake })).toThrow(/Valkey GLIDE client but it lacks createClient/);
  });
});

describe('GLIDE reconnects', () => {
  const env = useRedis({ server: { controllable: true } });
  /** Runs `test` with a GLIDE client of its own on the file's server, closed afterwards. */
  const withGlide = async (test: (glide: GlideClient) => Promise<void>): Promise<void> => {
    const glide = await GlideClient.createClient({ addresses: [{ host: env.server.host, port: env.server.port }] });
    try {
      await test(glide);
    } finally {
      glide.close();
    }
  };

  it('wakes a parked waiter once the subscriber is back after a server restart (not at the 30 s lease)', () =>
    withGlide(async (glide) => {
      const holder = createLockClient({ redis: glide });
      // Woken as soon as the subscriber is back, the waiter may try while the command connection is still
      // reconnecting: enough retries to cover that.
      const waiter = createLockClient({ redis: glide, retry: { retries: 20, minTimeout: 100, maxTimeout: 500, factor: 2, randomize: false } });
      const name = newName();
      await holder.getLock(name).acquire({ leaseTime: 30_000, unit: 'ms' });
      const lock = waiter.getLock(name);
      const waiting = lock.tryLock(25, 30, 'seconds');
      await waitUntil(async () => (await numsub(env.redis, lock.channel)) === 1, 5000, 2, 'the waiter to subscribe');
      await env.server.kill();
      // Down long enough for relock's once-a-second check of the subscriber to see the subscription gone.
      await sleep(1500);
      await env.server.restart();
      const start = performance.now();
      expect(await waiting).toBe(true);
      expect(performance.now() - start).toBeLessThan(10_000);
      await lock.unlock();
      await Promise.all([holder.shutdown(), waiter.shutdown()]);
    }), 30_000);

  it('after a dropped connection (a command timed out or failed to connect) and a later success, renews every hold at once (a hold lost in the restart is reported)', () =>
    withGlide(async (glide) => {
      // Renewals every 10 s: a loss reported sooner comes from the reconnect notice.
      const client = createLockClient({ redis: glide, lockWatchdogTimeout: 30_000, retry: { retries: 0, minTimeout: 10, maxTimeout: 10, factor: 1, randomize: false } });
      const lost: string[] = [];
      client.on('lockLost', (event) => lost.push(event.name));
      const name = newName();
      await client.getLock(name).lock();
      await env.server.kill();
      await expect(client.getLock(newName()).isLocked()).rejects.toThrow();
      await env.server.restart();
      await waitUntil(() => client.getLock(newName()).isLocked().then(() => true, () => false), 10_000, 50, 'a command to succeed');
      await waitUntil(() => lost.length > 0, 3000, 10, 'lockLost after the reconnect');
      expect(lost).toEqual([name]);
      await client.shutdown();
    }), 30_000);

  it('without dynamic subscribe (an early GLIDE 2) waits by polling, capped by the TTL, with a warning', () =>
    withGlide(async (glide) => {
      Object.defineProperty(glide, 'subscribe', { value: undefined });
      const lines: string[] = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
      const client = createLockClient({ redis: glide, logger });
      const name = newName();
      await client.getLock(name).acquire({ leaseTime: 500, unit: 'ms' });
      const start = performance.now();
      expect(await client.getLock(name).tryLock(5, 5, 'seconds')).toBe(true);
      // Woken at the holder's TTL, not before it, and well before the 5 s wait time.
      expect(performance.now() - start).toBeGreaterThan(300);
      expect(performance.now() - start).toBeLessThan(3000);
      expect(lines.join('')).toMatch(/no dynamic subscribe.*"msg":"subscribe failed; waiting by polling"/);
      expect(await numsub(env.redis, client.getLock(name).channel)).toBe(0);
      await client.shutdown();
      }));

    it('works on a client whose defaultDecoder is Bytes (replies and messages as strings all the same)', async () => {
    const glide = await GlideClient.createClient({ addresses: [{ host: env.server.host, port: env.server.port }], defaultDecoder: Decoder.Bytes });
    try {
      const client = createLockClient({ redis: glide });
      // The parked waiter is woken by the release message (recorded: `wokenBy: 'message'`) within ms,
      // against a bound of 1,000 ms: a round that failed while this process's loop or Redis stalled past
      // 400 ms (stallTolerant with probeReplies) is repeated, up to 3 rounds, on a fresh name, its holds
      // released; a message not read as a string leaves the waiter to its 10 s wait, every round.
      await stallTolerant(async (_, slowReply) => {
        const name = newName();
        const held = await client.getLock(name).acquire({ leaseTime: 30_000, unit: 'ms' });
        const acquisitions = recordAcquisitions();
        let stop = (): void => {};
        let waiting: Promise<boolean> | undefined;
        try {
          expect(await client.getLock(name).remainTimeToLive()).toBeGreaterThan(0);
          const base = await commandCalls(env.redis, 'evalsha');
          waiting = client.getLock(name).tryLock(10, 30, 'seconds');
          await waitUntil(async () => (await numsub(env.redis, client.getLock(name).channel)) === 1, 5000, 2, 'the waiter to subscribe');
          await callsSince(env.redis, 'evalsha', base, 2); // parked: its attempt after subscribing ran
          stop = probeReplies(env.redis, slowReply);
          const start = performance.now();
          await held.release();
          expect(await waiting).toBe(true);
          const took = performance.now() - start;
          stop();
          expect({ tookMs: took < 1000 ? '< 1000' : Math.round(took), calls: acquisitions.of(name) }).toEqual({ tookMs: '< 1000', calls: [{ outcome: 'acquired', wokenBy: 'message' }] });
        } finally {
          stop();
          acquisitions.stop();
          await held.release().catch(() => {});
          if (await (waiting ?? Promise.resolve(false)).catch(() => false)) await client.getLock(name).forceUnlock();
        }
      }, 400);
      // Bulk-string replies compared as strings: the key's TYPE and relock kind, read for a WrongTypeError.
      const other = client.getLock(newName());
      await env.redis.set(other.key, 'not a lock');
      await expect(other.tryLock(0, 5, 'seconds')).rejects.toMatchObject({ actualType: 'string', foundKind: undefined, askedKind: 'lock' });
      await env.redis.del(other.key);
      await client.shutdown();
    } finally {
      glide.close();
    }
  });

  it("a burst of relock calls past the client's inflightRequestsLimit waits for free slots: none is refused, even with no retries", async () => {
    const glide = await GlideClient.createClient({ addresses: [{ host: env.server.host, port: env.server.port }], inflightRequestsLimit: 2 });
    try {
      const client = createLockClient({ redis: glide, retry: { retries: 0 } });
      const locks = Array.from({ length: 200 }, () => client.getLock(newName()));
      const results = await Promise.allSettled(locks.map((lock) => lock.tryLock(0, 10, 'seconds')));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(results.filter((r) => r.status === 'fulfilled' && r.value)).toHaveLength(200);
      expect(await Promise.all(locks.map((lock) => lock.forceUnlock()))).toEqual(locks.map(() => true));
      await client.shutdown();
    } finally {
      glide.close();
    }
  });

  it("past the client's inflightRequestsLimit filled by the user's own commands, a call is retried, not failed (GLIDE refuses it unsent); many retrying at once print no MaxListenersExceededWarning", async () => {
    // A process of its own: Node prints the warning to the stderr of the process whose signal got the
    // listeners (a jest sandbox's `process` does not see the worker's real warnings).
    const worker = new Worker('retry-worker', { host: env.server.host, port: env.server.port, calls: 40 });
    expect(await worker.next('done')).toMatchObject({ granted: 40, failed: 0 });
    expect(await worker.exited).toBe(0);
    expect(worker.stderr).not.toMatch(/MaxListenersExceededWarning/);
  });

  it("close() rejects the commands in flight with ClosingError, yet they still run on the server (so relock's ClientClosedError for a call in flight at close does not say it did nothing)", async () => {
    const keys = Array.from({ length: 20 }, () => newName());
    for (const key of keys) {
      const glide = await GlideClient.createClient({ addresses: [{ host: env.server.host, port: env.server.port }] });
      const reply = glide.customCommand(['SET', key, '1']).then(
        () => 'ok',
        (e: unknown) => (e as Error).constructor.name,
      );
      glide.close();
      expect(await reply).toBe('ClosingError');
    }
    // GLIDE's core has the requests written before close(): it runs them (20 of 20 here), and only its
    // reply is dropped. Were this trait to change, docs/guarantees.md ("Closing your client") must too.
    const ran = await waitUntil(async () => {
      const n = Number(await env.redis.exists(keys));
      return n > 0 ? n : 0;
    }, 2000, 10, 'any SET in flight at close() to run');
    expect(ran).toBeGreaterThan(0);
  });

  it('a tryLock whose attempt is in flight when the user closes the client rejects with ClientClosedError; its grant, if it ran, ends with its lease', async () => {
    // Up to 5 rounds, each on a client of its own: every round must reject and leave either nothing or a
    // key that expires within the 5 s lease; the claim that the attempt can run anyway needs one round
    // where it did (5 of 5 here; GLIDE's core is not bound to run them, so it is not asked of every round).
    const leftGrant: number[] = [];
    for (let round = 0; round < 5 && leftGrant.length === 0; round++) {
      const glide = await GlideClient.createClient({ addresses: [{ host: env.server.host, port: env.server.port }] });
      const client = createLockClient({ redis: glide });
      try {
        const lock = client.getLock(newName());
        // The server knows the script first (else the attempt's EVALSHA would only be answered NOSCRIPT).
        await (await client.getLock(newName()).acquire({ leaseMs: 5000 })).release();
        // The user closes their client just as relock's attempt has been written to it.
        const send = glide.customCommand.bind(glide);
        glide.customCommand = ((args: string[], options?: object) => {
          const reply = send(args, options as never);
          if (args[0] === 'EVALSHA' || args[0] === 'EVAL') glide.close();
          return reply;
        }) as typeof glide.customCommand;
        await expect(lock.tryLock(0, 5, 'seconds')).rejects.toBeInstanceOf(ClientClosedError);
        // When the attempt ran all the same, its owner will never renew nor release it: it expires with its
        // 5 s lease, as a crashed holder's would (docs/guarantees.md, "Closing your client with a call in flight").
        const ttl = await waitUntil(async () => Math.max(0, Number(await env.redis.pTTL(lock.key))), 1000, 10, 'the grant of the attempt in flight').catch(() => 0);
        expect(ttl).toBeLessThanOrEqual(5000);
        if (ttl > 0) leftGrant.push(ttl);
      } finally {
        await client.shutdown();
      }
    }
    expect(leftGrant).toHaveLength(1);
  });

  it('fails with ClientClosedError once the user closed the GLIDE client', async () => {
      const glide = await GlideClient.createClient({ addresses: [{ host: env.server.host, port: env.server.port }] });
      const client = createLockClient({ redis: glide });
      glide.close();
      await expect(client.getLock(newName()).tryLock(0, 5, 'seconds')).rejects.toBeInstanceOf(ClientClosedError);
      await client.shutdown();
    });
  });
