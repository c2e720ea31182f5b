/**
 * Error replies classified by what the server says (src/redis/replies.ts): every text Redis 7.0.15, 7.2.6 and
 * Valkey 8.0.1 answered when provoked (the table in reply-texts.ts), then the same errors provoked live on
 * this file's server (`REDIS_SERVER_BIN`), so a run against a new server build checks its wording too.
 */
import { describe, expect, it } from '@jest/globals';
import { classify } from '../../src/redis/failures.js';
import { deniedBy, replyKind, type ReplyKind } from '../../src/redis/replies.js';
import { useRedis } from '../support/harness.js';
import { connect, uniqueName } from '../support/helpers.js';
import { REPLY_TEXTS, type Provoked } from './reply-texts.js';

/** What each provoked error must be read as; `sent` is the command relock would have sent. */
const EXPECTED: Record<Provoked, { kind: ReplyKind; denied?: { sent: string; command: string; permission: 'command' | 'key' | 'channel' } }> = {
  'noperm-command': { kind: 'noperm', denied: { sent: 'get', command: 'get', permission: 'command' } },
  'noperm-key': { kind: 'noperm', denied: { sent: 'set', command: 'set', permission: 'key' } },
  'noperm-channel': { kind: 'noperm', denied: { sent: 'publish', command: 'publish', permission: 'channel' } },
  'noperm-evalsha': { kind: 'noperm', denied: { sent: 'evalsha', command: 'evalsha', permission: 'command' } },
  'eval-noperm-command': { kind: 'noperm', denied: { sent: 'evalsha', command: 'evalsha', permission: 'command' } },
  'eval-noperm-key-declared': { kind: 'noperm', denied: { sent: 'evalsha', command: 'evalsha', permission: 'key' } },
  'eval-noperm-key': { kind: 'noperm', denied: { sent: 'evalsha', command: 'evalsha', permission: 'key' } },
  'eval-noperm-channel': { kind: 'noperm', denied: { sent: 'evalsha', command: 'evalsha', permission: 'channel' } },
  'fcall-noperm-command': { kind: 'noperm', denied: { sent: 'fcall', command: 'fcall', permission: 'command' } },
  'fcall-noperm-key-declared': { kind: 'noperm', denied: { sent: 'fcall', command: 'fcall', permission: 'key' } },
  'fcall-noperm-key': { kind: 'noperm', denied: { sent: 'fcall', command: 'fcall', permission: 'key' } },
  'fcall-noperm-channel': { kind: 'noperm', denied: { sent: 'fcall', command: 'fcall', permission: 'channel' } },
  noscript: { kind: 'noscript' },
  'function-missing': { kind: 'function-missing' },
  'function-exists': { kind: 'library-exists' },
  wrongtype: { kind: 'wrongtype' },
  'eval-wrongtype': { kind: 'wrongtype' },
  'eval-error': { kind: 'other' },
  busy: { kind: 'busy' },
  'busy-kill-none': { kind: 'other' },
  loading: { kind: 'loading' },
  readonly: { kind: 'readonly' },
  'eval-readonly': { kind: 'readonly' },
  moved: { kind: 'moved' },
  ask: { kind: 'ask' },
  tryagain: { kind: 'tryagain' },
  crossslot: { kind: 'crossslot' },
  'eval-moved': { kind: 'moved' },
};

/** What `classify` (the retry decision) makes of each kind. */
const FAILURE: Partial<Record<ReplyKind, ReturnType<typeof classify>>> = {
  busy: 'transient', loading: 'transient', readonly: 'transient', moved: 'transient', ask: 'transient', tryagain: 'transient',
  wrongtype: 'wrongtype', crossslot: 'crossslot',
};

describe.each(Object.entries(REPLY_TEXTS))('%s', (_server, texts) => {
  it.each(Object.entries(texts) as Array<[Provoked, string]>)('%s: %s', (label, text) => {
    const expected = EXPECTED[label];
    expect(replyKind(text)).toBe(expected.kind);
    expect(classify(new Error(text))).toBe(FAILURE[expected.kind] ?? 'fatal');
    const denied = expected.denied;
    expect(deniedBy(new Error(text), denied?.sent ?? 'get')).toEqual(denied && { command: denied.command, permission: denied.permission });
  });
});

describe('the same errors provoked on this server', () => {
  const env = useRedis();

  it('ACL refusals, direct, in EVAL and in FCALL, with NOSCRIPT, function-not-found, library-exists and WRONGTYPE', async () => {
    const prefix = `${uniqueName('replies')}:`;
    const user = uniqueName('replies-user');
    const library = uniqueName('replies_lib').replace(/\W/g, '_');
    await env.redis.sendCommand(['ACL', 'SETUSER', user, 'on', '>pw', `~${prefix}*`, `&${prefix}*`, '-@all', '+eval', '+evalsha', '+fcall', '+set', '+publish']);
    await env.redis.sendCommand(['FUNCTION', 'LOAD', `#!lua name=${library}
redis.register_function('${library}_get', function(k, a) return redis.call('get', k[1]) end)
redis.register_function('${library}_set', function(k, a) return redis.call('set', a[1], 'v') end)
redis.register_function('${library}_pub', function(k, a) return redis.call('publish', a[1], 'm') end)`]);
    await env.redis.set(`${prefix}string`, 'x');
    const user$ = await connect(env.server.url, { username: user, password: 'pw' });
    const reply = (redis: typeof user$, args: string[]): Promise<unknown> => redis.sendCommand(args).then(
      (ok) => { throw new Error(`${args.join(' ')} succeeded: ${String(ok)}`); },
      (error: unknown) => error,
    );
    try {
      const provoked: Array<[Provoked, Promise<unknown>]> = [
        ['noperm-command', reply(user$, ['GET', `${prefix}a`])],
        ['noperm-key', reply(user$, ['SET', 'elsewhere', 'x'])],
        ['noperm-channel', reply(user$, ['PUBLISH', 'elsewhere', 'm'])],
        ['eval-noperm-command', reply(user$, ['EVAL', "return redis.call('get', KEYS[1])", '1', `${prefix}a`])],
        ['eval-noperm-key-declared', reply(user$, ['EVAL', "return redis.call('set', KEYS[1], 'v')", '1', 'elsewhere'])],
        ['eval-noperm-key', reply(user$, ['EVAL', "return redis.call('set', ARGV[1], 'v')", '0', 'elsewhere'])],
        ['eval-noperm-channel', reply(user$, ['EVAL', "return redis.call('publish', ARGV[1], 'm')", '0', 'elsewhere'])],
        ['fcall-noperm-command', reply(user$, ['FCALL', `${library}_get`, '1', `${prefix}a`])],
        ['fcall-noperm-key-declared', reply(user$, ['FCALL', `${library}_get`, '1', 'elsewhere'])],
        ['fcall-noperm-key', reply(user$, ['FCALL', `${library}_set`, '0', 'elsewhere'])],
        ['fcall-noperm-channel', reply(user$, ['FCALL', `${library}_pub`, '0', 'elsewhere'])],
        ['noscript', reply(env.redis, ['EVALSHA', '0123456789012345678901234567890123456789', '0'])],
        ['function-missing', reply(env.redis, ['FCALL', `${library}_none`, '0'])],
        ['function-exists', reply(env.redis, ['FUNCTION', 'LOAD', `#!lua name=${library}\nredis.register_function('${library}_x', function() return 1 end)`])],
        ['wrongtype', reply(env.redis, ['LPUSH', `${prefix}string`, 'x'])],
        ['eval-wrongtype', reply(env.redis, ['EVAL', "return redis.call('lpush', KEYS[1], 'x')", '1', `${prefix}string`])],
      ];
      for (const [label, error] of provoked) {
        const expected = EXPECTED[label];
        const text = String((await error as Error).message);
        expect({ label, text, kind: replyKind(text) }).toEqual({ label, text, kind: expected.kind });
        const denied = expected.denied;
        expect({ label, text, denied: deniedBy(new Error(text), denied?.sent ?? 'get') }).toEqual({ label, text, denied: denied && { command: denied.command, permission: denied.permission } });
      }
    } finally {
      await user$.close();
      await env.redis.sendCommand(['FUNCTION', 'DELETE', library]);
      await env.redis.sendCommand(['ACL', 'DELUSER', user]);
    }
  });
});
