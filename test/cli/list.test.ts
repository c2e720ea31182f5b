/**
 * `relock list` against a real Redis: it finds every kind of object with SCAN (never KEYS), reads names
 * back from auxiliary keys, filters by pattern and type, leaves out the application's integer keys (an
 * RSemaphore nobody waits on looks the same) unless `--type semaphore` asks for them, keeps long names and
 * names with control characters on one line of a table, and draws progress only on a terminal.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { MAX_NAME_LENGTH, runInContext, type LockHandle, type PermitHandle } from '../../src/index.js';
import { json, runCli, runCliInTerminal } from '../support/cli.js';
import { closeAll, commandCalls, connect, lockClient, numsub, type Redis } from '../support/helpers.js';
import { startRedis, type RedisServer } from '../support/redis.js';

let server: RedisServer;
let redis: Redis;
/** Every object of this file lives under its own prefix, so the listing holds exactly them. */
const prefix = `cli-list-${randomBytes(4).toString('hex')}:`;
const held: Array<LockHandle | PermitHandle> = [];
let fairWaiter: Promise<LockHandle>;
let semaphoreWaiter: Promise<void>;

/**
 * The objects created, by name, with the type `list` must report by default. `c:sem` (a semaphore with
 * its permits set and nobody waiting) is not among them: its key holds an integer and nothing else, as
 * the application's counters `app:visits` and `app:retries` do.
 */
const expected: Record<string, string> = {
  'a:lock': 'lock',
  'a:fenced': 'fenced-lock',
  'a:spin': 'spin-lock',
  'b:fair': 'fair-lock',
  'b:rw': 'read-write-lock',
  'c:awaited': 'semaphore',
  'c:pes': 'expirable-semaphore',
  'c:counter': 'count-down-latch',
  '{d}:tagged': 'lock',
  'e:election': 'leader-election',
};

beforeAll(async () => {
  server = await startRedis();
  redis = await connect(server.url);
  const client = lockClient(redis, { keyPrefix: prefix });
  held.push(await client.getLock('a:lock').acquire());
  const fenced = client.getFencedLock('a:fenced');
  await fenced.tryLockAndGetToken(0, 10, 'seconds');
  await fenced.unlock(); // only its fence counter is left
  held.push(await client.getSpinLock('a:spin').acquire());
  held.push(await client.getFairLock('b:fair').acquire());
  fairWaiter = runInContext(() => client.getFairLock('b:fair').acquire({ waitMs: 600_000 }));
  held.push(await client.getReadWriteLock('b:rw').readLock().acquire());
  await client.getSemaphore('c:sem').trySetPermits(0);
  await client.getSemaphore('c:awaited').trySetPermits(0);
  semaphoreWaiter = client.getSemaphore('c:awaited').acquire({ waitMs: 600_000 });
  semaphoreWaiter.catch(() => {}); // awaited in afterAll
  await redis.set(`${prefix}app:visits`, '42');
  await redis.set(`${prefix}app:retries`, '-3');
  const pes = client.getPermitExpirableSemaphore('c:pes');
  await pes.setPermits(2);
  held.push(await pes.acquire());
  await client.getCountDownLatch('c:counter').trySetCount(2);
  held.push(await client.getLock('{d}:tagged').acquire());
  await (await client.getLeaderElection('e:election').campaign()).resign(); // only its term counter is left
  await redis.set(`${prefix}z:not-relock`, 'hello');
  await redis.rPush(`${prefix}z:list`, 'x');
  while ((await redis.lLen(`${prefix}relock:queue:{${prefix}b:fair}`)) === 0) await new Promise((r) => setTimeout(r, 5));
  while ((await numsub(redis, `${prefix}relock:channel:{${prefix}c:awaited}:permits`)) === 0) await new Promise((r) => setTimeout(r, 5));
}, 60_000);

afterAll(async () => {
  for (const handle of held.splice(0)) await handle.release();
  await (await fairWaiter)?.release();
  await lockClient(redis, { keyPrefix: prefix }).getSemaphore('c:awaited').release();
  await semaphoreWaiter;
  await closeAll();
  await redis?.close();
  await server?.stop();
});

interface Listing {
  scannedKeys: number;
  plainIntegers: number;
  nodes: string[];
  objects: Array<{ name: string; type: string; exists: boolean; ttlMs: number | null; summary: string }>;
}

const list = async (...args: string[]): Promise<Listing> => {
  const result = await runCli(['list', ...args, '--json', '--url', server.url, '--prefix', prefix]);
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return json<Listing>(result);
};

describe('relock list', () => {
  it('finds every object under the prefix with SCAN, never KEYS, with its type and TTL', async () => {
    const keysBefore = await commandCalls(redis, 'keys');
    const scansBefore = await commandCalls(redis, 'scan');
    const listing = await list('--scan-count', '2');
    expect(Object.fromEntries(listing.objects.map((o) => [o.name, o.type]))).toEqual(expected);
    expect(listing.objects.map((o) => o.name)).toEqual(Object.keys(expected).sort());
    expect(listing.nodes).toEqual([`127.0.0.1:${server.port}`]);
    expect(listing.scannedKeys).toBeGreaterThanOrEqual(13);
    expect(await commandCalls(redis, 'keys')).toBe(keysBefore);
    expect((await commandCalls(redis, 'scan')) - scansBefore).toBeGreaterThan(3);
    const byName = new Map(listing.objects.map((o) => [o.name, o]));
    expect(byName.get('a:lock')).toMatchObject({ exists: true, summary: 'held by 1 owner' });
    expect(byName.get('a:lock')!.ttlMs).toBeGreaterThan(10_000);
    expect(byName.get('a:fenced')).toMatchObject({ exists: false, ttlMs: null, summary: 'not held, last token 1' });
    expect(byName.get('b:fair')).toMatchObject({ summary: 'held by 1 owner, 1 waiting' });
    expect(byName.get('c:awaited')).toMatchObject({ ttlMs: null, summary: '0 free permits' });
    expect(listing.plainIntegers).toBe(3);
    expect(byName.get('c:pes')).toMatchObject({ summary: '1 of 2 permits taken' });
    expect(byName.get('a:spin')).toMatchObject({ summary: 'held by 1 owner' });
    expect(byName.get('c:counter')).toMatchObject({ ttlMs: null, summary: 'count 2' });
    expect(byName.get('e:election')).toMatchObject({ exists: false, ttlMs: null, summary: 'no leader, last term 1' });
  });

  it('filters by a glob over names and by --type', async () => {
    expect((await list('a:*')).objects.map((o) => o.name)).toEqual(['a:fenced', 'a:lock', 'a:spin']);
    expect((await list('?:[r-s]*')).objects.map((o) => o.name)).toEqual(['a:spin', 'b:rw']);
    expect((await list('\\{d\\}*')).objects.map((o) => o.name)).toEqual(['{d}:tagged']);
    expect((await list('--type', 'lock,expirable-semaphore')).objects.map((o) => o.name)).toEqual(['c:pes', 'a:lock', '{d}:tagged'].sort());
    expect((await list('nothing*')).objects).toEqual([]);
  });

  it("leaves out the application's integer keys; --type semaphore lists them, as it lists a semaphore nobody waits on", async () => {
    const listing = await list();
    expect(listing.objects.map((o) => o.name)).not.toContain('app:visits');
    expect(listing.objects.map((o) => o.name)).not.toContain('app:retries');
    expect(listing.plainIntegers).toBe(3); // app:visits, app:retries and c:sem
    const semaphores = await list('--type', 'semaphore');
    expect(semaphores.objects.map((o) => [o.name, o.summary])).toEqual([
      ['app:retries', '-3 free permits'],
      ['app:visits', '42 free permits'],
      ['c:awaited', '0 free permits'],
      ['c:sem', '0 free permits'],
    ]);
    const table = await runCli(['list', '--url', server.url, '--prefix', prefix]);
    expect(table.stdout).toMatch(/^10 relock objects \(\d+ keys scanned on 1 node\); 3 integer keys not shown \(a semaphore keeps only an integer, like any counter: --type semaphore lists them\)$/m);
  });

  it('keeps a name of the longest length relock takes, and names with control characters, on one line of the table, cut with … and escaped', async () => {
    const other = `cli-list-names-${randomBytes(4).toString('hex')}:`;
    const client = lockClient(redis, { keyPrefix: other });
    const long = `long-${'x'.repeat(MAX_NAME_LENGTH - 5)}`;
    const handles = [await client.getLock(long).acquire()];
    // relock refuses names with control characters (InvalidArgumentError), but a key written by another tool
    // or an older relock may hold one: written here as a lock's hash, as a holder would have left it.
    const raw = ['two\nlines', 'tab\there\x1b[2J'].map((name) => `${other}${name}`);
    for (const key of raw) {
      await redis.hSet(key, { kind: 'lock', 'an-old-client:1': '1' });
      await redis.pExpire(key, 30_000);
    }
    try {
      const result = await runCli(['list', '--url', server.url, '--prefix', other]);
      expect(result.code).toBe(0);
      const lines = result.stdout.trimEnd().split('\n');
      expect(lines).toHaveLength(5); // the header, three rows, the footer
      expect(result.stdout).not.toContain('\x1b');
      expect(Math.max(...lines.map((line) => line.length))).toBeLessThan(200);
      expect(lines.find((line) => line.includes('long-'))).toMatch(/^lock\s+long-x+… +[\d.]+ s\s+held by 1 owner$/);
      expect(lines.find((line) => line.includes('long-'))!.split(/\s+/)[1]).toHaveLength(72);
      expect(result.stdout).toMatch(/^lock\s+two\\nlines\s+/m);
      expect(result.stdout).toMatch(/^lock\s+tab\\there\\x1b\[2J\s+/m);
      const json = JSON.parse((await runCli(['list', '--json', '--url', server.url, '--prefix', other])).stdout) as Listing;
      expect(json.objects.map((o) => o.name).sort()).toEqual([long, 'tab\there\x1b[2J', 'two\nlines'].sort());
    } finally {
      for (const handle of handles) await handle.release();
      await redis.del(raw);
    }
  });

  it('prints a table, and draws progress on stderr only when run in a terminal without --json', async () => {
    const piped = await runCli(['list', '--url', server.url, '--prefix', prefix]);
    expect(piped.code).toBe(0);
    expect(piped.stderr).toBe('');
    expect(piped.stdout).toMatch(/^TYPE\s+NAME\s+TTL\s+STATE$/m);
    expect(piped.stdout).toMatch(/^fenced-lock\s+a:fenced\s+-\s+not held, last token 1$/m);
    expect(piped.stdout).toMatch(/^semaphore\s+c:awaited\s+no TTL\s+0 free permits$/m);
    expect(piped.stdout).toMatch(/^10 relock objects \(\d+ keys scanned on 1 node\); 3 integer keys not shown \(.+--type semaphore lists them\)$/m);
    const terminal = await runCliInTerminal(['list', '--url', server.url, '--prefix', prefix]);
    expect(terminal.code).toBe(0);
    expect(terminal.stdout).toMatch(/\rscanning 127\.0\.0\.1:\d+: \d+ keys read, \d+ relock objects/);
    const terminalJson = await runCliInTerminal(['list', '--json', '--url', server.url, '--prefix', prefix]);
    expect(terminalJson.code).toBe(0);
    expect(terminalJson.stdout).not.toContain('scanning');
    expect(JSON.parse(terminalJson.stdout).objects).toHaveLength(10);
  });
});
