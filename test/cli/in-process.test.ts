/**
 * The `relock` commands run in this process (`run()` of src/cli/program.ts, as src/cli/main.ts calls it)
 * against a real Redis, their output read from `process.stdout`/`process.stderr`.
 *
 * The other CLI suites run `relock` as a child process, which is the user's view but which StrykerJS's
 * per-test coverage cannot see: every mutant of src/cli/ that only they reach counts as "not covered" in
 * `npm run mutation-score`. The cases here check, in-process, the output those suites check from outside:
 * `inspect`'s text and JSON (holders with their hold counts, a missing key, a fair lock's queue, channels,
 * foreign data, the no-TTL warning, a free read-write lock), `list`'s footer on the application's integer
 * keys and a lone `[` in a pattern, its summary of a non-reentrant lock, `top`'s first refresh (no rate
 * yet), `watch`'s text lines (a name with no object yet, a latch's count), and the command line's precedence
 * (`--url` over `REDIS_URL`, which wins over the default; `--type` choices).
 */
import { afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { parseCommandLine } from '../../src/cli/args.js';
import { showProgress } from '../../src/cli/output.js';
import { duration } from '../../src/cli/render.js';
import { program, run } from '../../src/cli/program.js';
import { runInContext } from '../../src/index.js';
import { useRedis } from '../support/harness.js';
import { atMost, lockClient, numsub, subscribers, uniqueName, waitUntil, type Redis } from '../support/helpers.js';
import type { RedisServer } from '../support/redis.js';
import { startProxy } from '../support/tcp-proxy.js';

const harness = useRedis();
let server: RedisServer;
let redis: Redis;
beforeAll(() => {
  ({ server, redis } = harness);
});

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Starts `relock <args>` in this process with stdout and stderr captured, stdout not a terminal:
 * `output()` is what it printed so far, `done` its exit code and output once it returns.
 */
function start(...args: string[]): { output: () => string; done: Promise<Ran> } {
  let stdout = '';
  let stderr = '';
  jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true));
  jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  const tty = process.stdout.isTTY;
  process.stdout.isTTY = false;
  const done = run(['node', 'relock', ...args]).then(
    (code) => ({ code, stdout, stderr }),
    (error: unknown) => ({ code: -1, stdout, stderr: `${stderr}${String(error)}` }),
  ).finally(() => {
    process.stdout.isTTY = tty;
    jest.restoreAllMocks();
  });
  return { output: () => stdout, done };
}

/** Runs `relock <args>` in this process to its end (see `start`). */
const relock = (...args: string[]): Promise<Ran> => start(...args).done;

/** `relock <command> <args> --url <test server>`, which must exit 0 with nothing on stderr. */
async function ok(...args: string[]): Promise<string> {
  const result = await relock(...args, '--url', server.url);
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return result.stdout;
}

afterEach(() => {
  jest.restoreAllMocks();
  delete process.env.REDIS_URL;
});

describe('relock inspect, in-process', () => {
  it('prints a held lock: its owner with the hold count in a table, the TTL, the channel; JSON counts the subscribers', () => runInContext(async () => {
    const lock = lockClient(redis).getLock(uniqueName('inproc-lock'));
    const first = await lock.acquire({ leaseMs: 30_000 });
    await lock.acquire({ leaseMs: 30_000 });
    const lines = (await ok('inspect', lock.name)).trimEnd().split('\n');
    expect(lines[0]).toBe(`lock (RLock) "${lock.name}"  (key ${lock.key})`);
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}TTL {8}\d+\.\d s$/));
    expect(lines).toContain('  holders    1');
    expect(lines).toContain(`    ${first.owner}   2 holds`);
    expect(lines).toContain(`    ${lock.channel}   0 subscribers`);
    expect(lines.filter((line) => /^ {2}count\b/.test(line))).toEqual([]); // a latch's section only
    const json = JSON.parse(await ok('inspect', lock.name, '--json')) as Record<string, unknown>;
    expect(json).toMatchObject({ type: 'lock', exists: true, holders: [{ owner: first.owner, holds: 2 }], channels: [{ channel: lock.channel, subscribers: 0 }] });
    expect(json).not.toHaveProperty('truncated'); // present only when a key had more entries than --limit (docs/cli.md)
    await first.release();
    await first.release();
  }));

  it('says in the header that the key does not exist (a fenced lock released: only its counter is left)', () => runInContext(async () => {
    const lock = lockClient(redis).getFencedLock(uniqueName('inproc-fenced'));
    expect(await lock.tryLockAndGetToken(0, 20, 'seconds')).toBe(1n);
    await lock.unlock();
    const lines = (await ok('inspect', lock.name)).trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^fenced lock \\(FencedLock\\) "${lock.name}" {2}\\(key ${lock.key}, which does not exist\\)$`));
    expect(lines).toContain('  fencing token   1 (the last one handed out)');
  }));

  it("reads a fair lock's queue (a Redis list) and shows it head first, in text and JSON", async () => {
    const client = lockClient(redis, { fairLockWaitTimeout: 60_000 });
    const name = uniqueName('inproc-fair');
    const holder = await client.getFairLock(name).acquire();
    const lock = client.getFairLock(name);
    const waiter = runInContext(() => client.getFairLock(name).acquire({ waitMs: 30_000 }));
    await waitUntil(async () => (await redis.lLen(lock.queueKey)) === 1, 5000, 5, 'a queued waiter');
    const [queued] = await redis.lRange(lock.queueKey, 0, -1);
    await waitUntil(async () => (await numsub(redis, lock.waiterChannel(queued!))) === 1, 5000, 5, 'the waiter to subscribe');
    const json = JSON.parse(await ok('inspect', name, '--json')) as Record<string, unknown>;
    expect(json).toMatchObject({ type: 'fair-lock', holders: [{ owner: holder.owner, holds: 1 }], queue: [{ owner: queued, position: 1, subscribers: 1 }] });
    const text = await ok('inspect', name);
    expect(text).toContain('  queue      1 waiting, head first\n');
    expect(text).toMatch(new RegExp(`^ {4}1\\. {3}${queued} {3}deadline in [\\d.]+ s {3}1 subscriber$`, 'm'));
    await holder.release();
    await (await waiter).release();
  });

  it("shows an election nobody leads as `leader none`, with its last term", async () => {
    const client = lockClient(redis);
    const name = uniqueName('inproc-elect');
    await (await client.getLeaderElection(name).campaign()).resign();
    const text = await ok('inspect', name);
    expect(text).toMatch(/^ {2}leader {6}none$/m);
    expect(text).toMatch(/^ {2}last term {3}1$/m);
  });

  it('recognises a semaphore that has no key yet by the waiter on its channel', async () => {
    const semaphore = lockClient(redis).getSemaphore(uniqueName('inproc-waited'));
    const stop = new AbortController();
    const waiting = semaphore.acquire({ signal: stop.signal }).catch(() => undefined);
    await subscribers(redis, `relock:channel:{${semaphore.name}}:permits`, 1);
    const lines = (await ok('inspect', semaphore.name)).trimEnd().split('\n');
    stop.abort();
    await waiting;
    expect(lines[0]).toMatch(new RegExp(`^semaphore \\(RSemaphore\\) "${semaphore.name}" {2}\\(key ${semaphore.key}, which does not exist\\)$`));
  });

  it('says which keys it cut at --limit entries', async () => {
    const semaphore = lockClient(redis).getPermitExpirableSemaphore(uniqueName('inproc-limit'));
    await semaphore.setPermits(3);
    const taken = await semaphore.acquire({ permits: 3, leaseMs: 30_000 });
    const text = await ok('inspect', semaphore.name, '--limit', '1');
    expect(text).toContain(`\n  (${semaphore.key} has 3 entries: the first 1 shown; raise --limit to see more)\n`);
    expect(text).toMatch(/^ {2}permits\s+3 in all, 3 taken, 0 free$/m);
    // The one lease shown: a permit id of this acquisition and the time left on its lease.
    const row = /^ {4}(\S+) {3}lease (\d+\.\d) s left$/m.exec(text);
    expect(taken.ids).toContain(row?.[1]);
    expect(Number(row?.[2])).toBeGreaterThan(20);
    await taken.release();
  });

  it('warns on stderr about a lock key without TTL (PERSISTed after the acquisition)', async () => {
    const lock = lockClient(redis).getLock(uniqueName('inproc-nottl'));
    const handle = await lock.acquire({ leaseMs: 60_000 });
    await redis.persist(lock.key);
    const result = await relock('inspect', lock.name, '--url', server.url);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ {2}TTL {8}no TTL$/m);
    expect(result.stderr).toMatch(new RegExp(`^warning: ${lock.key} has no TTL: relock always sets one, so something else wrote or changed it; `, 'm'));
    await handle.release();
  });

  it('shows a free read-write lock (--type read-write-lock, no key) as `mode free` with holders `none`', async () => {
    const rw = lockClient(redis).getReadWriteLock(uniqueName('inproc-rw-free'));
    const text = await ok('inspect', rw.name, '--type', 'read-write-lock');
    expect(text).toMatch(/^ {2}mode {7}free$/m);
    expect(text).toMatch(/^ {2}holders {4}none$/m);
  });

  it('refuses a key holding data of a type no relock object uses, with exit code 3', async () => {
    const name = uniqueName('inproc-foreign');
    await redis.rPush(name, 'x');
    const result = await relock('inspect', name, '--url', server.url);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`${name} is a Redis list, which no relock object uses`);
  });
});

describe('relock list, in-process', () => {
  it("counts the application's integer keys in the footer, and reads a [ in a pattern as Redis does (an escaped one is literal)", async () => {
    const prefix = `inproc-list-${randomBytes(4).toString('hex')}:`;
    const client = lockClient(redis, { keyPrefix: prefix });
    const held = await client.getLock('a[b').acquire({ leaseMs: 30_000 });
    await redis.set(`${prefix}visits`, '42');
    const text = await ok('list', '--prefix', prefix);
    expect(text).toMatch(/^1 relock object \(\d+ keys? scanned on 1 node\); 1 integer key not shown \(a semaphore keeps only an integer, like any counter: --type semaphore lists them\)$/m);
    // The columns are as wide as their widest cell (the header's or a row's), 3 spaces apart.
    expect(text).toMatch(/^TYPE {3}NAME {3}TTL {6}STATE\n^lock {3}a\[b {4}\d\d\.\d s {3}held by 1 owner$/m);
    // As Redis reads a glob (test/cli/glob.test.ts): `\[` is a literal `[`; an unclosed `[` opens a class.
    const listed = JSON.parse(await ok('list', 'a\\[b', '--json', '--prefix', prefix)) as { objects: Array<{ name: string }> };
    expect(listed.objects.map((o) => o.name)).toEqual(['a[b']);
    const none = JSON.parse(await ok('list', 'a[b', '--json', '--prefix', prefix)) as { objects: unknown[] };
    expect(none.objects).toEqual([]);
    await held.release();
  });
});

describe('relock list and top, in-process', () => {
  it("summarises a held non-reentrant lock as `held by <owner>`", async () => {
    const prefix = `inproc-nr-${randomBytes(4).toString('hex')}:`;
    const lock = lockClient(redis, { keyPrefix: prefix }).getNonReentrantLock('mine');
    const held = await lock.acquire({ leaseMs: 30_000 });
    const text = await ok('list', '--prefix', prefix);
    expect(text).toMatch(new RegExp(`^non-reentrant-lock {3}mine {3}\\d\\d\\.\\d s {3}held by ${held.owner}$`, 'm'));
    await held.release();
  });

  it.each(['SIGINT', 'SIGTERM'] as const)('stops top at %s between refreshes (exit 0), without waiting for the next one', async (signal) => {
    const prefix = `inproc-top-${randomBytes(4).toString('hex')}:`;
    const before = process.listenerCount(signal);
    // One refresh, then a wait of 6 s (--duration; the interval is 10 min) that only the signal cuts short.
    const top = start('top', '--interval', '600000', '--duration', '6000', '--prefix', prefix, '--url', server.url);
    try {
      await waitUntil(() => top.output().includes('ACQ/S'), 5000, 5, "top's first refresh");
      process.emit(signal, signal);
      expect(await atMost(top.done, 3000, 'still running 3 s after the signal')).toMatchObject({ code: 0, stderr: '' });
      expect(process.listenerCount(signal)).toBe(before);
    } finally {
      await top.done;
    }
  });

  it('shows no acquisition rate (`-`) on the first refresh of top, even for a held lock', async () => {
    const prefix = `inproc-top-${randomBytes(4).toString('hex')}:`;
    const held = await lockClient(redis, { keyPrefix: prefix }).getLock('busy').acquire({ leaseMs: 30_000 });
    const lines = (await ok('top', '--count', '1', '--prefix', prefix)).trimEnd().split('\n');
    expect(lines[1]).toMatch(/^TYPE {3}NAME {3}HOLDERS {3}WAITERS {3}TTL {6}ACQ\/S$/);
    expect(lines[2]).toMatch(/^lock {3}busy {3}1 {9}0 {9}\d\d\.\d s {3}-$/);
    await held.release();
  });
});

describe('relock watch, in-process', () => {
  it('reads the object once even when stopped while it subscribes (SIGINT as the SUBSCRIBE goes out), then exits 0', async () => {
    const proxy = await startProxy('127.0.0.1', server.port);
    try {
      const lock = lockClient(redis).getLock(uniqueName('inproc-watch-stop'));
      let signalled = false;
      proxy.onRequest = (request) => {
        if (signalled || !request.toString('latin1').toUpperCase().includes('SUBSCRIBE')) return;
        signalled = true;
        process.emit('SIGINT', 'SIGINT');
      };
      const result = await relock('watch', lock.name, '--url', `redis://127.0.0.1:${proxy.port}`);
      expect(signalled).toBe(true);
      expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(/watching a name that has no relock object yet/);
    } finally {
      await proxy.close();
    }
  });

  it('queues one read at most while a read is slow: the --interval ticks meanwhile are dropped, not run later in a burst', async () => {
    const proxy = await startProxy('127.0.0.1', server.port);
    try {
      const lock = lockClient(redis).getLock(uniqueName('inproc-watch-slow'));
      let reads = 0; // each read of the object is one EVALSHA of the snapshot script
      proxy.onRequest = (request) => void (reads += request.toString('latin1').split('EVALSHA').length - 1);
      const watching = start('watch', lock.name, '--interval', '10', '--url', `redis://127.0.0.1:${proxy.port}`);
      await waitUntil(() => watching.output().includes('watching'), 10_000, 5, 'the first read');
      proxy.latencyMs = 300; // a read now takes 600 ms: about 60 ticks of 10 ms come while it is out
      const before = reads;
      await waitUntil(() => reads > before, 2000, 1, 'a read sent through the slow link');
      // Ticks come for 200 ms while the read is out (the bound below holds for any length; with the guard
      // removed, every tick is a read of its own, about 20 here and 60 by the time the read returns).
      await new Promise((resolve) => setTimeout(resolve, 200));
      process.emit('SIGINT', 'SIGINT'); // stops the ticks; what is queued still runs before the watch exits
      proxy.latencyMs = 0;
      const result = await watching.done;
      expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
      // The slow read and the one poll queued behind it (each tick while one is queued is dropped).
      expect(reads - before).toBeLessThanOrEqual(2);
    } finally {
      await proxy.close();
    }
  });

  it('follows a name that has no object yet, and prints the acquisition once a lock is taken there', async () => {
    const lock = lockClient(redis).getLock(uniqueName('inproc-watch'));
    const watching = start('watch', lock.name, '--count', '1', '--interval', '20', '--url', server.url);
    await waitUntil(() => watching.output().includes('watching'), 10_000, 5, 'the first read');
    const handle = await lock.acquire({ leaseMs: 30_000 });
    const result = await watching.done;
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/watching a name that has no relock object yet/);
    expect(lines[1]).toMatch(new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} {2}acquire ${handle.owner} \\(1 hold now\\) {2}→ {2}holders: ${handle.owner} ×1$`));
    await handle.release();
  });

  it("prints a latch's count going down as `count <from> → <to>`", async () => {
    const latch = lockClient(redis).getCountDownLatch(uniqueName('inproc-latch'));
    await latch.trySetCount(2);
    const watching = start('watch', latch.name, '--count', '1', '--interval', '20', '--url', server.url);
    await waitUntil(() => watching.output().includes('watching'), 10_000, 5, 'the first read');
    await latch.countDown();
    const result = await watching.done;
    expect(result.code).toBe(0);
    expect(result.stdout.trimEnd().split('\n')[1]).toMatch(/ {2}count 2 → 1 {2}.*→ {2}count 1$/);
  });
});

describe('relock leaders, in-process', () => {
  it('lists the elections under a pattern with their leader and term; one nobody leads shows (no leader) and dashes', async () => {
    const client = lockClient(redis);
    const name = uniqueName('inproc-leaders');
    const leadership = await client.getLeaderElection(name, { identity: 'worker-3' }).campaign();
    const listed = JSON.parse(await ok('leaders', `${name}*`, '--json')) as { elections: Array<Record<string, unknown>> };
    expect(listed.elections).toEqual([expect.objectContaining({ name, leader: 'worker-3', term: '1' })]);
    const idle = uniqueName('inproc-leaders');
    await (await client.getLeaderElection(idle).campaign()).resign();
    const text = await ok('leaders', `${idle}*`);
    expect(text).toMatch(/^ELECTION\s+LEADER\s+TERM\s+LEASE$/m);
    expect(text).toMatch(new RegExp(`^${idle}\\s+\\(no leader\\)\\s+-\\s+-$`, 'm'));
    await leadership.resign();
  });
});

describe('relock watch on a semaphore, in-process', () => {
  it('prints permits taken as `acquire <n> permits`', async () => {
    const semaphore = lockClient(redis).getSemaphore(uniqueName('inproc-sem'));
    await semaphore.trySetPermits(3);
    const watching = start('watch', semaphore.name, '--count', '1', '--interval', '20', '--url', server.url);
    await waitUntil(() => watching.output().includes('watching'), 10_000, 5, 'the first read');
    await semaphore.acquire(2);
    const result = await watching.done;
    expect(result.code).toBe(0);
    expect(result.stdout.trimEnd().split('\n')[1]).toMatch(/ {2}acquire 2 permits {2}→ {2}1 free permits$/);
    await semaphore.release(2);
  });
});

describe('relock command line, in-process', () => {
  const options = (...args: string[]): Record<string, unknown> => {
    const parsed = parseCommandLine(program(), args);
    if ('print' in parsed) throw new Error(`printed instead of parsing: ${parsed.print}`);
    return parsed.options as Record<string, unknown>;
  };

  it('takes --url over REDIS_URL, REDIS_URL over the default, and the default when REDIS_URL is unset or empty', () => {
    expect(options('inspect', 'x').url).toBe('redis://localhost:6379');
    process.env.REDIS_URL = '';
    expect(options('inspect', 'x').url).toBe('redis://localhost:6379');
    process.env.REDIS_URL = 'redis://from-env:1';
    expect(options('inspect', 'x').url).toBe('redis://from-env:1');
    expect(options('inspect', 'x', '--url', 'redis://given:2').url).toBe('redis://given:2');
  });

  it('prints a duration in the unit people read: ms below 1 s, s below 1 min, then m and s, then h and m; below 0 `expired`', () => {
    expect([-1, 0, 999.4, 1000, 59_949, 60_000, 3_599_999, 3_600_000].map(duration)).toEqual(['expired', '0 ms', '999 ms', '1.0 s', '59.9 s', '1 m 00 s', '59 m 59 s', '1 h 00 m']);
  });

  it('accepts a --type among its choices and refuses any other', () => {
    expect(options('inspect', 'x', '--type', 'lock').type).toBe('lock');
    expect(() => options('inspect', 'x', '--type', 'nope')).toThrow(/option '--type <type>' argument 'nope' is invalid\. Allowed choices are /);
  });

  it('draws progress only when stdout and stderr are both terminals and the output is not JSON', () => {
    const [out, err] = [process.stdout.isTTY, process.stderr.isTTY];
    try {
      for (const [stdoutTty, stderrTty, json, expected] of [[true, true, false, true], [true, false, false, false], [false, true, false, false], [true, true, true, false]] as const) {
        process.stdout.isTTY = stdoutTty;
        process.stderr.isTTY = stderrTty;
        expect(showProgress(json)).toBe(expected);
      }
    } finally {
      process.stdout.isTTY = out;
      process.stderr.isTTY = err;
    }
  });
});
