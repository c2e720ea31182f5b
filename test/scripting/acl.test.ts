/**
 * Relock under Redis ACL users: the least-privilege rule names every command relock's scripts call, `auto`
 * switches to functions when EVAL/EVALSHA are refused, and each missing permission class (scripting
 * command, pub/sub channel, key pattern) fails with a `PermissionError` naming the command and the class,
 * without a hang. A user limited to another prefix cannot read or release relock's locks.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { IllegalMonitorStateError, PermissionError, RedisCommandError, runInContext, type LockClientOptions } from '../../src/index.js';
import { aclRule, DIRECT_COMMANDS, SCRIPT_COMMANDS } from '../support/acl.js';
import { useRedis } from '../support/harness.js';
import { commandCalls, connect, lockClient, uniqueName, waitUntil, type Redis } from '../support/helpers.js';

const env = useRedis();
let users = 0;

/**
 * A node-redis client of a new user with the least-privilege rule of `mode` for `app:`, changed by
 * `edit` (ACL rule tokens appended, so a later `-cmd`, `resetchannels` or `resetkeys` takes away).
 */
async function userClient(mode: 'eval' | 'functions', edit: string[] = []): Promise<Redis> {
  const username = `acl-test-${++users}`;
  await env.redis.sendCommand(['ACL', 'SETUSER', username, ...aclRule(mode, 'app:', 'pw'), ...edit]);
  const redis = await connect(env.server.url, { username, password: 'pw' });
  opened.push(redis);
  return redis;
}
const opened: Redis[] = [];
afterEach(async () => {
  for (const redis of opened.splice(0)) await redis.close();
});

const client = (redis: Redis, options: Omit<LockClientOptions, 'redis' | 'url'> = {}) => lockClient(redis, { keyPrefix: 'app:', ...options });

/** Every file under `dir`. */
const files = (dir: string): string[] => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : [join(dir, f)]));

describe('the least-privilege rule', () => {
  it('names every command relock sends or its Lua scripts call (redis.call / redis.pcall in src/)', () => {
    const called = new Set(files('src').flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/redis\.p?call\('(\w+)'/g)].map((m) => m[1]!.toLowerCase())));
    expect([...called].filter((c) => !(SCRIPT_COMMANDS as readonly string[]).includes(c))).toEqual([]);
    expect(DIRECT_COMMANDS).toEqual(expect.arrayContaining(['publish', 'subscribe', 'unsubscribe', 'unlink']));
  });

  it('is the one docs/security.md gives for each mode, standalone and Cluster (key prefix myapp:)', () => {
    const page = readFileSync('docs/security.md', 'utf8');
    for (const mode of ['eval', 'functions'] as const) expect(page).toContain(`ACL SETUSER relock ${aclRule(mode, 'myapp:', 'secret').join(' ')}\n`);
    expect(page).toContain(`ACL SETUSER relock ${aclRule('functions', 'myapp:', 'secret', true).join(' ')}\n`);
    const evalCluster = aclRule('eval', 'myapp:', 'secret', true).join(' ');
    expect(evalCluster).toBe(aclRule('functions', 'myapp:', 'secret', true).join(' ').replace('+fcall +fcall_ro +function|load', '+evalsha +eval'));
  });
});

describe('latch cleanup without UNLINK', () => {
  it('a user refused UNLINK: the latch of an unlock that answered nil is left to its TTL, and the failure is logged at debug with the error and the number of latches', () => runInContext(async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
    const c = client(await userClient('eval', ['-unlink']), { logger });
    const lock = c.getLock(uniqueName());
    await expect(lock.unlock()).rejects.toBeInstanceOf(IllegalMonitorStateError);
    const logged = (): string | undefined => lines.find((line) => line.includes('could not delete unlock latches'));
    await waitUntil(() => logged() !== undefined, 5000, 10, 'the debug line');
    expect(JSON.parse(logged()!)).toMatchObject({ level: 20, latches: 1, err: { message: expect.stringContaining('NOPERM') as unknown } });
  }));
});

describe('scripting permission', () => {
  it("auto: a user refused EVAL and EVALSHA gets relock's scripts as functions, and the switch is logged once", async () => {
    const redis = await userClient('functions');
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const c = client(redis, { logger });
    const fcalls = await commandCalls(env.redis, 'fcall');
    const locks = [c.getLock(uniqueName()), c.getLock(uniqueName()), c.getFencedLock(uniqueName())];
    const handles = await Promise.all(locks.map((lock) => lock.acquire({ leaseMs: 5000 })));
    for (const lock of locks) expect(await env.redis.exists(lock.key)).toBe(1);
    await Promise.all(handles.map((h) => h.release()));
    for (const lock of locks) expect(await env.redis.exists(lock.key)).toBe(0);
    expect(await commandCalls(env.redis, 'fcall')).toBeGreaterThanOrEqual(fcalls + 6);
    expect(lines.filter((l) => l.includes('relock runs its scripts as Redis Functions'))).toHaveLength(1);
  });

  it("eval: a user refused EVALSHA fails with PermissionError naming 'evalsha' and the command class; nothing written", async () => {
    const c = client(await userClient('functions'), { scripting: 'eval' });
    const lock = c.getLock(uniqueName());
    const error = await lock.tryLock(0, 5, 'seconds').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermissionError);
    expect(error).toBeInstanceOf(RedisCommandError);
    expect(error).toMatchObject({ code: 'NO_PERMISSION', command: 'evalsha', permission: 'command' });
    expect((error as Error).message).toContain('+evalsha');
    expect(await env.redis.exists(lock.key)).toBe(0);
  });

  it("functions: a user refused FUNCTION LOAD fails with PermissionError naming 'function|load' on a server without the library", async () => {
    await env.redis.sendCommand(['FUNCTION', 'FLUSH']);
    const c = client(await userClient('functions', ['-function|load']), { scripting: 'functions' });
    const error = await c.getLock(uniqueName()).tryLock(0, 5, 'seconds').catch((e: unknown) => e);
    expect(error).toMatchObject({ constructor: PermissionError, command: 'function|load', permission: 'command' });
  });

  it("auto: a user refused both EVALSHA and FCALL fails with PermissionError naming 'fcall'", async () => {
    const c = client(await userClient('functions', ['-fcall']));
    const error = await c.getLock(uniqueName()).tryLock(0, 5, 'seconds').catch((e: unknown) => e);
    expect(error).toMatchObject({ constructor: PermissionError, command: 'fcall', permission: 'command' });
  });
});

for (const mode of ['eval', 'functions'] as const) {
  describe(`${mode} mode`, () => {
    it('a key outside the key pattern: PermissionError of the key class, nothing written', async () => {
      const c = client(await userClient(mode, ['resetkeys', '~other:*']), { scripting: mode });
      const lock = c.getLock(uniqueName());
      const error = await lock.tryLock(0, 5, 'seconds').catch((e: unknown) => e);
      expect(error).toMatchObject({ constructor: PermissionError, command: mode === 'eval' ? expect.stringMatching(/^eval(sha)?$/) : 'fcall', permission: 'key' });
      expect((error as Error).message).toContain('lacks a key pattern (~<keyPrefix>*) covering the keys of');
      expect(await env.redis.exists(lock.key)).toBe(0);
    });

    it('a channel outside the channel pattern: a waiter refused SUBSCRIBE polls instead of hanging; a release deletes the key, then its publish is refused: PermissionError of the channel class (Redis does not roll a script back)', async () => {
      const c = client(await userClient(mode, ['resetchannels', '&other:*']), { scripting: mode, subscriptionTimeout: 60_000 });
      const name = uniqueName();
      const held = await c.getLock(name).acquire({ leaseMs: 300 });
      const started = Date.now();
      // The waiter's SUBSCRIBE is refused: it polls, and takes the lock when the holder's lease ends.
      expect(await c.getLock(name).tryLock(5, 5, 'seconds')).toBe(true);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(held.signal.aborted).toBe(true);
      const other = c.getLock(uniqueName());
      const handle = await other.acquire({ leaseMs: 5000 });
      const error = await handle.release().catch((e: unknown) => e);
      // EVAL when the server met the unlock script first here (NOSCRIPT), EVALSHA otherwise.
      expect(error).toMatchObject({ constructor: PermissionError, command: mode === 'eval' ? expect.stringMatching(/^eval(sha)?$/) : 'fcall', permission: 'channel' });
      expect(await env.redis.exists(other.key)).toBe(0);
    });

    it("a waiter refused SUBSCRIBE polls: it takes the lock soon after another client's release, not at the holder's lease end", async () => {
      const lines: string[] = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
      const waiter = client(await userClient(mode, ['resetchannels', '&other:*']), { scripting: mode, logger });
      const holder = client(await userClient(mode), { scripting: mode });
      const name = uniqueName();
      const held = await holder.getLock(name).acquire({ leaseMs: 30_000 });
      const waiting = waiter.getLock(name).tryLock(5, 30, 'seconds');
      // The SUBSCRIBE was refused (the waiter now polls); the release then publishes to nobody.
      await waitUntil(() => lines.some((line) => line.includes('subscribe failed; waiting by polling')), 5000, 2, 'the refused SUBSCRIBE');
      await held.release();
      // A waiter that took the refused channel for live would sleep to the holder's lease end, past its 5 s.
      expect(await waiting).toBe(true);
      // Not unlocked: its PUBLISH would be refused (the test above).
      await env.redis.del(waiter.getLock(name).key);
    });
  });
}

describe('another prefix', () => {
  it("a user limited to another prefix cannot read, release or take relock's locks: PermissionError of the key class, the lock untouched", async () => {
    const owner = client(await userClient('functions'), { scripting: 'functions' });
    const name = uniqueName();
    const lock = owner.getLock(name);
    const handle = await lock.acquire({ leaseMs: 10_000 });
    const hash = await env.redis.hGetAll(lock.key);
    const intruder = client(await userClient('functions', ['resetkeys', '~other:*', 'resetchannels', '&other:*']), { scripting: 'functions' });
    const theirs = intruder.getLock(name);
    expect(theirs.key).toBe(lock.key);
    // The unlock runs in a context, so that it reaches Redis: outside one, after its own tryLock failed, this
    // task's unlock is refused before any command (IllegalMonitorStateError: it took nothing).
    const unlockInContext = (): Promise<void> => intruder.runInContext(() => theirs.unlock());
    for (const call of [() => theirs.isLocked(), () => theirs.getHoldCount(), () => theirs.forceUnlock(), () => theirs.tryLock(0, 5, 'seconds'), unlockInContext]) {
      await expect(call()).rejects.toMatchObject({ constructor: PermissionError, permission: 'key' });
    }
    expect(await env.redis.hGetAll(lock.key)).toEqual(hash);
    await handle.release();
    expect(await env.redis.exists(lock.key)).toBe(0);
  });
});
