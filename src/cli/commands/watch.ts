import type { CommandSpec } from '../args.js';
import type { Target } from '../connect.js';
import { messageOf } from '../connect.js';
import { describe, watchedChannels, type Description } from '../describe.js';
import { baseChannels, forcedType, inspectObject, objectKeys, type ObjectKeys, type ObjectType } from '../detect.js';
import { EXIT } from '../errors.js';
import { COMMON_OPTIONS, TYPE_OPTION, wholeNumber, type CommonOptions } from '../options.js';
import { printJsonLine, printLines } from '../output.js';
import { holdersText, TYPE_LABEL, oneLine } from '../render.js';
import { withTarget } from '../run.js';
import { diff, tally, type Change, type Tally } from '../tally.js';
import { DEFAULT_LIMIT } from './inspect.js';

/** Options of `relock watch`. */
export interface WatchOptions extends CommonOptions {
  type?: string;
  duration?: number;
  count?: number;
  interval: number;
}

/** What set off a read of the object: a message on one of its channels, or the poll timer. */
type Trigger = { readonly via: 'message'; readonly channel: string; readonly message: string } | { readonly via: 'poll' };

/** One line of `watch` output. */
export interface WatchEvent extends Omit<Change, 'event'> {
  readonly at: string;
  readonly event: Change['event'] | 'message' | 'watching';
  readonly name: string;
  readonly type: ObjectType | null;
  readonly via?: 'message' | 'poll';
  readonly channel?: string;
  readonly message?: string;
  /** The state after the event: holders, queue, mode, permits or count (as `inspect` shows them). */
  readonly state: Partial<Description> | null;
}

/**
 * `relock watch <name>`: subscribes to every channel the object may publish on (and to each fair-lock
 * waiter's own channel), and reads the object after each message and every `--interval` ms (relock
 * publishes on releases only, so acquisitions are seen by reading). Prints each change (acquire, release,
 * enqueue, dequeue, count) or message with a timestamp and the state after it, until Ctrl-C,
 * `--duration` or `--count`.
 */
export const watchCommand: CommandSpec<WatchOptions> = {
  name: 'watch',
  description: 'follow acquisitions and releases live',
  argument: { name: 'name', description: 'the object name (without --prefix)', required: true },
  options: [
    ...COMMON_OPTIONS,
    TYPE_OPTION,
    { flags: '--interval <ms>', description: 'read the object this often, to see acquisitions (which publish nothing)', parse: wholeNumber(10), default: 250 },
    { flags: '--duration <ms>', description: 'stop after this many milliseconds', parse: wholeNumber(1) },
    { flags: '--count <n>', description: 'stop after this many events', parse: wholeNumber(1) },
  ],
  run(name, options) {
    return withTarget(options, (target) => new Watch(target, objectKeys(target.locks, name), options).run());
  },
};

/** One watch: its subscriptions, the last state seen, and what stops it. */
class Watch {
  /** Channels this watch subscribes to (one subscription each: not counted as waiters). */
  private readonly own = new Map<string, number>();
  private previous: Tally | undefined;
  private chain: Promise<void> = Promise.resolve();
  private polling = false;
  private events = 0;
  private failing = false;
  /** The type found by an earlier read, kept when the object's keys go (a released lock is still a lock). */
  private seen: ObjectType | undefined;
  private stopped = false;
  private stop: () => void = () => {};

  constructor(
    private readonly target: Target,
    private readonly keys: ObjectKeys,
    private readonly options: WatchOptions,
  ) {}

  private readonly onMessage = (message: string, channel: string): void => this.enqueue({ via: 'message', channel, message });

  async run(): Promise<number> {
    const stopped = new Promise<void>((resolve) => {
      this.stop = () => {
        this.stopped = true;
        resolve();
      };
    });
    const { interval, duration } = this.options;
    const timers = [setInterval(() => this.poll(), interval), ...(duration !== undefined ? [setTimeout(() => this.stop(), duration)] : [])];
    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];
    for (const signal of signals) process.once(signal, this.stop);
    this.target.connection.onReconnected(() => {
      if (!this.options.json) process.stderr.write('relock: reconnected; reading the object again\n');
      this.enqueue({ via: 'poll' });
    });
    this.target.onError((error) => {
      if (!this.failing) process.stderr.write(`relock: the connection to Redis failed: ${messageOf(error)} (reconnecting)\n`);
      this.failing = true;
    });
    try {
      await this.subscribe(baseChannels(this.keys));
      this.enqueue(undefined);
      await stopped;
    } finally {
      for (const timer of timers) clearTimeout(timer);
      for (const signal of signals) process.off(signal, this.stop);
      await this.chain;
      await Promise.all([...this.own.keys()].map((channel) => this.target.connection.unsubscribe(channel, this.onMessage)));
    }
    return EXIT.ok;
  }

  private poll(): void {
    if (this.polling) return;
    this.polling = true;
    this.enqueue({ via: 'poll' });
  }

  /** Reads the object after everything queued before (so events come out in order); `undefined`: the first read, done even after a stop. */
  private enqueue(trigger: Trigger | undefined): void {
    if (this.stopped && trigger !== undefined) return;
    this.chain = this.chain.then(async () => {
      if (trigger?.via === 'poll') this.polling = false;
      try {
        await this.refresh(trigger);
        this.failing = false;
      } catch (error) {
        if (!this.failing) process.stderr.write(`relock: reading "${this.keys.name}" failed: ${messageOf(error)} (retrying)\n`);
        this.failing = true;
      }
    });
  }

  private async refresh(trigger: Trigger | undefined): Promise<void> {
    const { connection } = this.target;
    const read = await inspectObject(connection, this.keys, DEFAULT_LIMIT, forcedType(this.options.type) ?? this.seen, this.own);
    const type = read.detection.found === 'object' ? read.detection.type : null;
    if (type !== null) this.seen = type;
    const description = type === null ? undefined : await describe(connection, read.state, type, read.subs);
    await this.subscribe(watchedChannels(read.state));
    const current = tally(description);
    const state = description ? stateOf(description) : null;
    const head = (event: WatchEvent['event']): Pick<WatchEvent, 'at' | 'event' | 'name' | 'type'> => ({ at: new Date().toISOString(), event, name: this.keys.name, type });
    if (trigger === undefined) {
      this.previous = current;
      return this.print({ ...head('watching'), state });
    }
    const changes = diff(this.previous, current);
    this.previous = current;
    const cause = trigger.via === 'message' ? { via: 'message' as const, channel: trigger.channel, message: trigger.message } : { via: 'poll' as const };
    const lines: WatchEvent[] = changes.map((change) => ({ ...head(change.event), ...change, ...cause, state }));
    if (lines.length === 0 && trigger.via === 'message') lines.push({ ...head('message'), ...cause, state });
    for (const line of lines) {
      if (this.options.count !== undefined && this.events >= this.options.count) return;
      this.print(line);
      this.events++;
      if (this.options.count !== undefined && this.events >= this.options.count) this.stop();
    }
  }

  /** Subscribes to the channels of `wanted` not yet subscribed, and leaves fair-lock waiter channels no longer wanted. */
  private async subscribe(wanted: readonly string[]): Promise<void> {
    const { connection } = this.target;
    for (const channel of wanted.filter((c) => !this.own.has(c))) {
      await connection.subscribe(channel, this.onMessage);
      this.own.set(channel, 1);
    }
    for (const channel of [...this.own.keys()].filter((c) => !wanted.includes(c))) {
      this.own.delete(channel);
      await connection.unsubscribe(channel, this.onMessage);
    }
  }

  private print(line: WatchEvent): void {
    if (this.options.json) return printJsonLine(line);
    printLines([textOf(line)]);
  }
}

/** The part of a description that changes as the object is used. */
function stateOf(d: Description): Partial<Description> {
  const { name: _name, key: _key, type: _type, serverTime: _time, channels: _channels, warnings: _warnings, truncated: _truncated, ...state } = d;
  return state;
}

function textOf(e: WatchEvent): string {
  const at = new Date(e.at);
  const time = `${at.toTimeString().slice(0, 8)}.${String(at.getMilliseconds()).padStart(3, '0')}`;
  const what = e.event === 'watching' ? `watching ${e.type ? TYPE_LABEL[e.type] : 'a name that has no relock object yet'} "${e.name}" (Ctrl-C to stop)` : describeChange(e);
  const cause = e.via === 'message' ? `  [message "${e.message}" on ${e.channel}]` : '';
  // One line per event, whatever the name, message or owner holds (a newline, an escape sequence).
  return oneLine(`${time}  ${what}${cause}  →  ${summaryOf(e.state)}`);
}

function describeChange(e: WatchEvent): string {
  if (e.event === 'message') return 'message (no change seen)';
  const who = e.owner ?? e.permit;
  if (who !== undefined) return `${e.event} ${who}${e.holds !== undefined ? ` (${e.holds} hold${e.holds === 1 ? '' : 's'} now)` : ''}`;
  if (e.permits !== undefined) return `${e.event} ${e.permits} permit${e.permits === 1 ? '' : 's'}`;
  return `${e.event} ${e.from} → ${e.to}`;
}

function summaryOf(state: Partial<Description> | null): string {
  if (!state || !state.exists) return 'nothing held';
  if (state.holders) return `holders: ${holdersText(state.holders)}${state.queue?.length ? `; ${state.queue.length} waiting` : ''}`;
  if (state.mode !== undefined) return `${state.mode} mode; writer: ${state.writer ? holdersText([state.writer]) : 'none'}; readers: ${holdersText(state.readers ?? [])}`;
  if (state.permits) return `${state.permits.taken} of ${state.permits.total} permits taken`;
  if (state.freePermits !== undefined) return `${state.freePermits} free permits`;
  return `count ${state.count}`;
}
