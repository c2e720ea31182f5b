import type { Core } from './core.js';
import { WRONG_KIND, redisTypeOf, type ObjectKind } from './kinds.js';
import { Script } from './redis/script.js';
import { positiveTime } from './semaphore/permits.js';
import type { TimeUnit } from './time.js';

/**
 * Redisson's `RObject` / `RExpirable` calls on the semaphores and the latch (`isExists`, `delete`,
 * `expire`), over every key of an object. `delete` and `expire` are refused (`WrongTypeError`, nothing
 * changed) when the object's main key belongs to another kind, as every relock write is.
 */

/**
 * `delete` or `expire` of KEYS (the object's main key first, then its other keys). ARGV[1] = `delete` |
 * `expire`, ARGV[2] = kind, ARGV[3] = the main key's Redis type, ARGV[4] = TTL (ms, expire) or channel
 * (delete), ARGV[5] = message published on the channel after a delete ('' for none), ARGV[6] = publish
 * command. Returns 1 when a key was deleted / given the TTL, else 0; a WRONGTYPE error when the main key
 * holds another type or, for a hash, another kind.
 */
const KEY_OPS = new Script(
  'object.keys',
  `${WRONG_KIND}local t = redis.call('type', KEYS[1])['ok']
if t ~= 'none' and t ~= ARGV[3] then return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value') end
if t == 'hash' then
  local found = redis.call('hget', KEYS[1], 'kind')
  if found ~= ARGV[2] then return wrongKind(found) end
end
if ARGV[1] == 'delete' then
  if redis.call('del', unpack(KEYS)) == 0 then return 0 end
  if ARGV[5] ~= '' then redis.call(ARGV[6], ARGV[4], ARGV[5]) end
  return 1
end
local n = 0
for _, key in ipairs(KEYS) do n = n + redis.call('pexpire', key, ARGV[4]) end
return n > 0 and 1 or 0`,
);

/** The keys of one semaphore or latch, and the calls on them all. */
export class ObjectKeys {
  constructor(
    private readonly core: Core,
    private readonly kind: ObjectKind,
    /** The main key first. */
    private readonly keys: readonly string[],
    private readonly channel: string,
    /** Published on `channel` when `delete` removed something ('' for nothing): the latch wakes its awaiters. */
    private readonly deletedMessage: string,
  ) {}

  /** Whether any of the keys exists (`EXISTS`). */
  async isExists(): Promise<boolean> {
    this.core.checkOpen();
    const [main] = this.keys;
    const reply = await this.core.executor.run('object.isExists', () => this.core.connection.send(main, ['EXISTS', ...this.keys]), { idempotent: true });
    return Number(reply) > 0;
  }

  /** Deletes every key (kind-checked); true when something was deleted. */
  async delete(): Promise<boolean> {
    return (await this.run('delete', this.channel, this.deletedMessage)) === 1;
  }

  /** Sets a TTL of `time` `unit` on every key (kind-checked); true when a key existed. */
  async expire(time: number, unit: TimeUnit): Promise<boolean> {
    return (await this.run('expire', String(positiveTime(time, unit, 'time')), '')) === 1;
  }

  private async run(op: 'delete' | 'expire', arg: string, message: string): Promise<number> {
    this.core.checkOpen();
    const { connection } = this.core;
    const reply = await this.core.executor.run(
      `object.${op}`,
      () => KEY_OPS.run(connection, this.keys, [op, this.kind, redisTypeOf(this.core.kinds, this.kind), arg, message, connection.publishCommand]),
      { idempotent: true, expects: { key: this.keys[0], kind: this.kind } },
    );
    return Number(reply);
  }
}
