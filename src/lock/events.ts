import type { Core } from '../core.js';
import { InvalidArgumentError, KeyspaceEventsUnavailableError, RedisCommandError } from '../errors.js';
import type { MessageListener } from '../redis/connection.js';

/** The lock events relock can observe reliably (Redisson's `ExpiredObjectListener`, `DeletedObjectListener`). */
export type LockEvent = 'expired' | 'deleted';

/** The keyspace notification of each event, and the `notify-keyspace-events` flag it needs besides `K`. */
const NOTIFICATION: Readonly<Record<LockEvent, { message: string; flag: string }>> = Object.freeze({
  expired: { message: 'expired', flag: 'x' },
  deleted: { message: 'del', flag: 'g' },
});

/**
 * The listeners of one object's key events, through Redis keyspace notifications: channel
 * `__keyspace@<db>__:<key>`, messages `expired` and `del`. Listener ids are local to the object.
 */
export class KeyEvents {
  private readonly listeners = new Map<number, { channel: string; listener: MessageListener }>();
  private nextId = 1;

  constructor(
    private readonly core: Core,
    private readonly key: string,
    private readonly name: string,
  ) {}

  /** See `RLock.addListener`. */
  async add(event: LockEvent, listener: (name: string) => void): Promise<number> {
    if (!Object.hasOwn(NOTIFICATION, event)) throw new InvalidArgumentError('event', `must be 'expired' or 'deleted'; got ${JSON.stringify(event)}`);
    if (typeof listener !== 'function') throw new InvalidArgumentError('listener', 'must be a function');
    this.core.checkOpen();
    const { connection } = this.core;
    if (connection.topology === 'cluster') throw new KeyspaceEventsUnavailableError('cluster', 'Redis Cluster does not send keyspace notifications across nodes');
    const { message, flag } = NOTIFICATION[event];
    await this.checkEnabled(flag);
    const info = String(await this.core.executor.run('events.clientInfo', () => connection.send(undefined, ['CLIENT', 'INFO']), { idempotent: true }));
    const db = /\bdb=(\d+)/.exec(info)?.[1] ?? '0';
    const channel = `__keyspace@${db}__:${this.key}`;
    const onMessage: MessageListener = (received) => {
      if (received !== message) return;
      try {
        listener(this.name);
      } catch (err) {
        this.core.log.warn({ lock: this.name, event, err }, 'a lock event listener threw');
      }
    };
    await connection.subscribe(channel, onMessage);
    const id = this.nextId++;
    this.listeners.set(id, { channel, listener: onMessage });
    return id;
  }

  /** See `RLock.removeListener`. */
  async remove(id: number): Promise<void> {
    const entry = this.listeners.get(id);
    if (!entry) return;
    this.listeners.delete(id);
    await this.core.connection.unsubscribe(entry.channel, entry.listener);
  }

  /** Throws `KeyspaceEventsUnavailableError` unless `notify-keyspace-events` has `K` and `flag` (or `A`). */
  private async checkEnabled(flag: string): Promise<void> {
    let reply: unknown;
    try {
      reply = await this.core.executor.run('events.config', () => this.core.connection.send(undefined, ['CONFIG', 'GET', 'notify-keyspace-events']), { idempotent: true });
    } catch (error) {
      if (!(error instanceof RedisCommandError)) throw error;
      throw new KeyspaceEventsUnavailableError('config-refused', 'CONFIG GET notify-keyspace-events was refused; enable K and the event flags in your Redis settings', { cause: error });
    }
    const value = configValue(reply);
    if (!value.includes('K') || !(value.includes(flag) || value.includes('A'))) {
      throw new KeyspaceEventsUnavailableError('disabled', `notify-keyspace-events is "${value}", needs K and ${flag} (e.g. CONFIG SET notify-keyspace-events Kgx)`);
    }
  }
}

/** The value of a `CONFIG GET` reply: `[name, value]` (RESP2) or `{ name: value }` (RESP3). */
function configValue(reply: unknown): string {
  if (Array.isArray(reply)) return String(reply[1] ?? '');
  if (reply instanceof Map) return String([...reply.values()][0] ?? '');
  if (reply && typeof reply === 'object') return String(Object.values(reply)[0] ?? '');
  return '';
}
