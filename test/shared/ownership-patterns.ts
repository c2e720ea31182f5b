/**
 * Ownership outside lock contexts in the code Node users write (issue 27 item 2): one test per pattern,
 * each with two "instances" (two LockClients on separate connections, each with its module-scope lock
 * object on one name) and an invariant checker: at most one holder inside the critical section at once,
 * and no lost update of a counter kept in Redis. Each pattern runs `RUNS` times; a pattern relock cannot
 * own exactly is refused with a typed error, and the recommended form (handles, `withLock`) is checked.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { IllegalMonitorStateError, OwnerUnknownError, ReentryNeedsContextError, runInContext, type LockClient, type RLock } from '../../src/index.js';
import { connect, lockClient, sleep, uniqueName, waitUntil } from '../support/helpers.js';
import type { ClientFamily, OpenedClient } from './clients.js';
import type { RedisLike, Topology } from './topology.js';

/** Runs of each pattern. */
const RUNS = 200;

/** The critical section of both instances: counts holders inside at once, and updates a counter in Redis by read-then-write. */
class Section {
  inside = 0;
  most = 0;
  entries = 0;
  readonly key = uniqueName('counter');
  constructor(private readonly redis: RedisLike) {}

  async enter(): Promise<void> {
    this.most = Math.max(this.most, ++this.inside);
    const value = Number((await this.redis.get(this.key)) ?? 0);
    await this.redis.set(this.key, String(value + 1));
    this.entries++;
    this.inside--;
  }

  /** The invariant: one holder at a time, no lost update; and the section was entered at all. */
  async check(minEntries = 1): Promise<void> {
    expect({ most: this.most, counter: Number((await this.redis.get(this.key)) ?? 0) }).toEqual({ most: 1, counter: this.entries });
    expect(this.entries).toBeGreaterThanOrEqual(minEntries);
  }
}

/** The name of a rejection (or 'ok'), for tallies. */
const outcome = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'ok',
    (e: unknown) => (e as Error).name,
  );

/** Counts of each string in `xs`. */
function tally(xs: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const x of xs) counts[x] = (counts[x] ?? 0) + 1;
  return counts;
}

/** A server for `listener` on a free port; closed after the test with its agent's sockets. */
async function serve(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** GET `path` from `port` through `agent`: resolves to the response body. */
function get(port: number, agent: http.Agent, path = '/'): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, agent, path }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/**
 * A handler body, as users write it with a module-scope lock: lock, answer at once (the client's next
 * request on a keep-alive socket then arrives while this one is still inside), the critical section,
 * unlock. Resolves to 'ok' or the name of the error it ran into.
 */
async function handle(lock: RLock, section: Section, respond: () => void): Promise<string> {
  try {
    await lock.lock();
    respond();
    try {
      await section.enter();
    } finally {
      await lock.unlock();
    }
    return 'ok';
  } catch (error) {
    respond();
    return (error as Error).name;
  }
}

export function ownershipPatternTests(topology: () => Topology, family: ClientFamily | undefined): void {
  let second: OpenedClient | undefined;
  afterAll(async () => second?.close());

  /** Two instances: lock clients on separate connections (the topology's, and one opened here), with their lock objects on one name. */
  async function instances(options: { lockWatchdogTimeout?: number } = {}): Promise<{ clients: LockClient[]; locks: RLock[]; section: Section }> {
    const t = topology();
    const { host, port } = t.seeds[0];
    const url = `redis://${host}:${port}`;
    const opened: OpenedClient = second ?? (family ? await family.standalone(url) : await connect(url).then((client) => ({ client, close: () => client.close() })));
    second = opened;
    const clients = [t.client(options), lockClient(opened.client, options)];
    const name = uniqueName('ledger');
    return { clients, locks: clients.map((c) => c.getLock(name)), section: new Section(t.redis) };
  }

  describe(`ownership patterns outside contexts (${RUNS} runs each, two instances)`, () => {
    it('sibling callbacks: Promise.allSettled(items.map(post)), post = tryLock … finally unlock(): a refused sibling never releases the other one', async () => {
      const { locks, section } = await instances();
      const unlocks: string[] = [];
      const post = async (lock: RLock): Promise<void> => {
        try {
          if (await lock.tryLock(0, 10_000, 'ms')) await section.enter();
        } finally {
          unlocks.push(await outcome(lock.unlock()));
        }
      };
      for (let run = 0; run < RUNS; run++) await Promise.all(locks.map((lock) => Promise.allSettled([1, 2, 3].map(() => post(lock)))));
      await section.check(RUNS);
      // Each entry released its own hold; every refused sibling's unlock threw, releasing nothing.
      expect(tally(unlocks)).toEqual({ ok: section.entries, IllegalMonitorStateError: 6 * RUNS - section.entries });
    });

    it('dispatch loop: acquire() in a loop, the handle passed to the job it starts, released there; the contextless form is refused', async () => {
      const { locks, section } = await instances();
      const loop = async (lock: RLock): Promise<void> => {
        const jobs: Array<Promise<void>> = [];
        for (let i = 0; i < RUNS; i++) {
          const handle = await lock.acquire();
          jobs.push(
            new Promise<void>((resolve) =>
              setImmediate(() => {
                void section
                  .enter()
                  .finally(() => handle.release())
                  .then(resolve);
              }),
            ),
          );
        }
        await Promise.all(jobs);
      };
      await Promise.all(locks.map(loop));
      await section.check(2 * RUNS);
      // The same loop with lock() and unlock() in the job: the loop's second lock() cannot be told from a re-entry.
      const [lock] = locks;
      await lock.lock();
      const job = new Promise<void>((resolve) => setImmediate(() => void lock.unlock().then(resolve)));
      const again = await lock.lock().then(() => undefined, (e: unknown) => e);
      expect(again).toBeInstanceOf(ReentryNeedsContextError);
      expect((again as Error).message).toMatch(/relock reenters only inside a context: use withLock\(\)\/runInContext\(\), or use the handle from acquire\(\)/);
      await job;
      expect(await topology().redis.exists(lock.key)).toBe(0);
    });

    for (const keepAlive of [true, false]) {
      it(`HTTP ${keepAlive ? 'with keep-alive (one socket per client)' : 'without keep-alive'}: a module-scope lock in a node:http handler`, async () => {
        const { locks, section } = await instances();
        const results: string[] = [];
        const servers = locks.map((lock) =>
          http.createServer((_req, res) => {
            void handle(lock, section, () => res.headersSent || res.end('ok')).then((r) => results.push(r));
          }),
        );
        const ports = await Promise.all(servers.map(serve));
        const agents = ports.map(() => new http.Agent({ keepAlive, maxSockets: 1 }));
        try {
          await Promise.all(ports.map((port, i) => Promise.all(Array.from({ length: RUNS }, () => get(port, agents[i])))));
          await waitUntil(() => results.length === 2 * RUNS, 10_000, 5, 'every handler to finish');
        } finally {
          for (const agent of agents) agent.destroy();
          await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
        }
        expect(tally(results)).toEqual({ ok: 2 * RUNS });
        await section.check(2 * RUNS);
      });
    }

    it('Express and Fastify apps (one each), a module-scope lock in the route, keep-alive clients', async () => {
      const { locks, section } = await instances();
      const results: string[] = [];
      const app = express();
      app.get('/', (_req, res) => {
        void handle(locks[0], section, () => res.headersSent || res.send('ok')).then((r) => results.push(r));
      });
      const fastify = Fastify();
      fastify.get('/', async (_req, reply) => {
        results.push(await handle(locks[1], section, () => reply.sent || void reply.send('ok')));
        return reply;
      });
      await fastify.listen({ port: 0, host: '127.0.0.1' });
      const expressServer = http.createServer(app);
      const ports = [await serve(expressServer), (fastify.server.address() as AddressInfo).port];
      const agents = ports.map(() => new http.Agent({ keepAlive: true, maxSockets: 2 }));
      try {
        await Promise.all(ports.map((port, i) => Promise.all(Array.from({ length: RUNS }, () => get(port, agents[i])))));
        await waitUntil(() => results.length === 2 * RUNS, 10_000, 5, 'every handler to finish');
      } finally {
        for (const agent of agents) agent.destroy();
        await new Promise((resolve) => expressServer.close(resolve));
        await fastify.close();
      }
      expect(tally(results)).toEqual({ ok: 2 * RUNS });
      await section.check(2 * RUNS);
    });

    it('setImmediate, queueMicrotask and EventEmitter callbacks: each callback locks and unlocks', async () => {
      const { locks, section } = await instances();
      const results: Array<Promise<string>> = [];
      const body = (lock: RLock) => (): void => {
        results.push(
          outcome(
            (async () => {
              await lock.lock();
              try {
                await section.enter();
              } finally {
                await lock.unlock();
              }
            })(),
          ),
        );
      };
      const emitters = locks.map((lock) => new EventEmitter().on('job', body(lock)));
      for (let i = 0; i < RUNS; i++) {
        locks.forEach((lock, k) => {
          if (i % 3 === 0) setImmediate(body(lock));
          else if (i % 3 === 1) queueMicrotask(body(lock));
          else emitters[k].emit('job');
        });
      }
      await waitUntil(() => results.length === 2 * RUNS, 5000, 5, 'every callback to start');
      expect(tally(await Promise.all(results))).toEqual({ ok: 2 * RUNS });
      await section.check(2 * RUNS);
    });

    it('timers: each tick of a setInterval locks and unlocks; a lock taken in one tick and released in the next is refused (OwnerUnknownError), the hold kept', async () => {
      const { locks, section } = await instances();
      const results: Array<Promise<string>> = [];
      await Promise.all(
        locks.map(
          (lock) =>
            new Promise<void>((resolve) => {
              let ticks = 0;
              const timer = setInterval(() => {
                results.push(
                  outcome(
                    (async () => {
                      await lock.lock();
                      try {
                        await section.enter();
                      } finally {
                        await lock.unlock();
                      }
                    })(),
                  ),
                );
                if (++ticks === RUNS) {
                  clearInterval(timer);
                  resolve();
                }
              }, 1);
            }),
        ),
      );
      expect(tally(await Promise.all(results))).toEqual({ ok: 2 * RUNS });
      await section.check(2 * RUNS);
      // On Node 20/22 the first tick's note would stay on the interval's resource: the second tick would release the first's hold.
      const [lock] = locks;
      const steps: string[] = [];
      await new Promise<void>((resolve) => {
        let tick = 0;
        const timer = setInterval(() => {
          if (++tick === 1) void lock.tryLock(0, 10, 'seconds').then((got) => steps.push(`locked ${got}`));
          else if (steps.length > 0) {
            clearInterval(timer);
            void outcome(lock.unlock()).then((r) => {
              steps.push(r);
              resolve();
            });
          }
        }, 1);
      });
      expect(steps).toEqual(['locked true', 'OwnerUnknownError']);
      expect(await topology().redis.exists(lock.key)).toBe(1);
      await lock.forceUnlock();
    });

    it('worker pool: long-lived workers pulling jobs from a queue, each job locks and unlocks', async () => {
      const { locks, section } = await instances();
      const results: string[] = [];
      const pool = async (lock: RLock): Promise<void> => {
        const queue = Array.from({ length: RUNS }, (_, i) => i);
        const worker = async (): Promise<void> => {
          while (queue.shift() !== undefined) {
            results.push(
              await outcome(
                (async () => {
                  await lock.lock();
                  try {
                    await section.enter();
                  } finally {
                    await lock.unlock();
                  }
                })(),
              ),
            );
          }
        };
        await Promise.all(Array.from({ length: 4 }, worker));
      };
      await Promise.all(locks.map(pool));
      expect(tally(results)).toEqual({ ok: 2 * RUNS });
      await section.check(2 * RUNS);
    });

    it('generic-pool style dispatch: a dispatcher starts each job once a resource is free; jobs that lock() at once are refused when ambiguous, jobs with withLock or a context are exact', async () => {
      const { clients, locks, section } = await instances();
      /** A pool of `size` resources: acquire() resolves once one is free (as generic-pool's). */
      const makePool = (size: number): { acquire(): Promise<void>; release(): void } => {
        let free = size;
        const waiting: Array<() => void> = [];
        return {
          acquire: () => (free > 0 ? (free--, Promise.resolve()) : new Promise<void>((resolve) => waiting.push(resolve))),
          release: () => {
            const next = waiting.shift();
            if (next) next();
            else free++;
          },
        };
      };
      const dispatch = async (job: () => Promise<void>): Promise<string[]> => {
        const pool = makePool(3);
        const runs: Array<Promise<string>> = [];
        for (let i = 0; i < RUNS; i++) {
          await pool.acquire();
          runs.push(outcome(job().finally(() => pool.release())));
        }
        return Promise.all(runs);
      };
      // The recommended forms: withLock, or the job's lock()/unlock() inside runInContext.
      const exact = await Promise.all(
        locks.map((lock, k) =>
          Promise.all([
            dispatch(() => clients[k].withLock(lock.name, () => section.enter())),
            dispatch(() =>
              runInContext(async () => {
                await lock.lock();
                try {
                  await section.enter();
                } finally {
                  await lock.unlock();
                }
              }),
            ),
          ]),
        ),
      );
      expect(tally(exact.flat(2))).toEqual({ ok: 4 * RUNS });
      // Contextless jobs: a job started after an earlier job's lock() in the dispatcher's run sees that
      // note as its own; when it still holds, the job is refused, never admitted beside it.
      const contextless = await dispatch(async () => {
        await locks[0].lock();
        try {
          await section.enter();
        } finally {
          await locks[0].unlock();
        }
      });
      for (const r of contextless) expect(['ok', 'ReentryNeedsContextError']).toContain(r);
      await section.check(4 * RUNS);
      expect(await topology().redis.exists(locks[0].key)).toBe(0);
    });

    it("unlock() by a task that made no acquisition: OwnerUnknownError, whose message names the lock and the fix; the holder's lock stays", async () => {
      const { locks } = await instances();
      const [lock] = locks;
      const taken = new Promise<void>((resolve) => setImmediate(() => void lock.lock().then(resolve)));
      await taken;
      const refused = await lock.unlock().then(() => undefined, (e: unknown) => e);
      expect(refused).toBeInstanceOf(OwnerUnknownError);
      expect(refused).toBeInstanceOf(IllegalMonitorStateError);
      expect(refused).toMatchObject({ code: 'OWNER_UNKNOWN', lockName: lock.name });
      expect((refused as Error).message).toBe(
        `cannot unlock "${lock.name}": unlock() outside a lock context releases only an acquisition made by the calling task, and this task made none of "${lock.name}" (taken in another callback?): release the handle from acquire(), or use withLock()/runInContext()`,
      );
      expect(await lock.isLocked()).toBe(true);
      await lock.forceUnlock();
      await sleep(0);
    });
  });
}
