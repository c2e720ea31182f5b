import type { Core } from './core.js';
import { checkedRead, OTHER_KIND, type ObjectKind } from './kinds.js';
import { defineScript, replies } from './redis/script.js';
import { positiveTime } from './semaphore/permits.js';
import type { TimeUnit } from './time.js';

/**
 * Redisson's `RObject` / `RExpirable` calls on the semaphores and the latch (`isExists`, `delete`,
 * `expire`), over every key of an object. `delete` and `expire` are refused (`WrongTypeError`, nothing
 * changed) when the object's main key belongs to another kind, as every relock write is.
 */

/**
 * `delete` or `expire` of every key of an object (KEYS: `main`, the object's main key, then the list
 * `others`). `op` = `delete` | `expire`, `kind`, `value` = TTL (ms, expire) or channel (delete),
 * `message` = published on the channel after a delete ('' for none), `publishCommand`. True when a key
 * was deleted / given the TTL; a WRONGTYPE error (`otherKind`) when the main key holds another kind or
 * data relock did not write (a string that is not a permit count, a hash without relock's kind field).
 */
const KEY_OPS = defineScript({
  name: 'object.keys',
  keys: ['main'],
  restKeys: 'others',
  args: ['op', 'kind', 'value', 'message', 'publishCommand'],
  lua: `${OTHER_KIND}local refused = otherKind(main, kind)
if refused then return refused end
if op == 'delete' then
  if redis.call('del', unpack(KEYS)) == 0 then return 0 end
  if message ~= '' then redis.call(publishCommand, value, message) end
  return 1
end
local n = 0
for _, key in ipairs(KEYS) do n = n + redis.call('pexpire', key, value) end
return n > 0 and 1 or 0`,
  parse: replies.flag,
});

/** The keys of one semaphore or latch, and the calls on them all. */
export class ObjectKeys {
  constructor(
    private readonly core: Core,
    private readonly kind: ObjectKind,
    private readonly main: string,
    /** The object's other keys. */
    private readonly others: readonly string[],
    private readonly channel: string,
    /** Published on `channel` when `delete` removed something ('' for nothing): the latch wakes its awaiters. */
    private readonly deletedMessage: string,
  ) {}

  /** Whether any of the keys exists (`EXISTS`), after checking the main key's kind (`checkedRead`: another kind's key or other data throws `WrongTypeError`). */
  async isExists(): Promise<boolean> {
    this.core.checkOpen();
    const { main, others, kind } = this;
    const expects = { key: main, kind };
    const reply = await this.core.executor.run('object.isExists', () => checkedRead(this.core.connection, expects, ['EXISTS', main, ...others]), { idempotent: true, expects });
    return Number(reply) > 0;
  }

  /** Deletes every key (kind-checked); true when something was deleted. */
  async delete(): Promise<boolean> {
    return this.run('delete', this.channel, this.deletedMessage);
  }

  /** Sets a TTL of `time` `unit` on every key (kind-checked); true when a key existed. */
  async expire(time: number, unit: TimeUnit): Promise<boolean> {
    return this.run('expire', String(positiveTime(time, unit, 'time')), '');
  }

  private run(op: 'delete' | 'expire', value: string, message: string): Promise<boolean> {
    this.core.checkOpen();
    const { connection } = this.core;
    const { main, others, kind } = this;
    return this.core.executor.run(
      `object.${op}`,
      () => KEY_OPS.run(connection, { main, others, op, kind, value, message, publishCommand: connection.publishCommand }),
      { idempotent: true, expects: { key: main, kind } },
    );
  }
}
