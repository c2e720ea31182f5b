import { hostname } from 'node:os';
import { outsideContexts, runInContext } from '../context.js';
import type { Core } from '../core.js';
import { InvalidArgumentError, RedisUnavailableError } from '../errors.js';
import { refuseUnknown } from '../option-keys.js';
import { setLongTimeout } from '../time.js';
import { Leadership } from './leadership.js';
import { LeaderLock } from './leader-lock.js';
import { LEADER_READ } from './scripts.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RLeaderElection`. */
    'leader-election': true;
  }
}

declare module '../observe/kinds.js' {
  interface MetricKinds {
    /** `RLeaderElection`'s campaigns. */
    leader_election: true;
  }
}

/** Options of `LockClient.getLeaderElection()`. */
export interface LeaderElectionOptions {
  /**
   * What this process publishes as leader, for `leader()`, `observe()` and `relock leaders`: a non-empty
   * string of at most 200 characters. Default `hostname:pid` (`os.hostname()` and `process.pid`).
   */
  identity?: string;
}

/** Who leads an election (`RLeaderElection.leader()`). */
export interface LeaderInfo {
  /** The identity the leader published (`LeaderElectionOptions.identity`). */
  readonly identity: string;
  /** Its term (fencing token). */
  readonly term: bigint;
  /** Milliseconds left on its lease (`PTTL` of the election's key); the watchdog renews it while it leads. */
  readonly remainingMs: number;
}

/** One leader change seen by `RLeaderElection.observe()`: a leader was elected. */
export interface LeaderChange {
  /** The identity the new leader published. */
  readonly identity: string;
  /** Its term: greater than every earlier one. */
  readonly term: bigint;
}

/** Options of `RLeaderElection.campaign()`. */
export interface CampaignOptions {
  /** Aborts the campaign; the promise then rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** Options of `RLeaderElection.run()`. */
export interface RunLeaderOptions {
  /** Ends the loop: the current leadership is resigned (its signal aborts) and `run()` resolves once `fn` returned. */
  signal?: AbortSignal;
}

/** Options of `RLeaderElection.observe()`. */
export interface ObserveOptions {
  /** Ends the iteration (it then finishes without error) and unsubscribes. */
  signal?: AbortSignal;
}

/** Pause before campaigning again after Redis could not be reached, in ms. */
const RETRY_PAUSE_MS = 1000;

/**
 * Leader election on a fenced lock: at most one process of those campaigning on `name` leads at a time,
 * each leadership has a term (a fencing token strictly greater than every earlier leader's), and everyone
 * can see who leads and hear every change. Its semantics are etcd's `concurrency.Election` (`Campaign`
 * blocks until elected, `Resign`, `Leader`, `Observe`, the term as the leader key's revision) with
 * Curator's `LeaderLatch` loss notice (the leadership's `signal` aborts when it is lost, as
 * `LeaderLatchListener.notLeader`); `run()` is Curator's `LeaderSelector` loop (take leadership, run, let
 * go, queue again).
 *
 * It is built on `RFencedLock` and the watchdog, not beside them: a campaign is a fenced-lock acquisition
 * that waits as every lock waiter does (pub/sub wake-ups, the holder's TTL as the fallback timer; no
 * polling), the watchdog renews the leader's lease (`lockWatchdogTimeout`) and aborts its signal a drift
 * margin before Redis could expire it, and a crashed leader is replaced within one lease. A leader paused
 * past its lease (GC, SIGSTOP) believes it leads until it runs again: its term is then stale, which a
 * fenced resource refuses.
 *
 * Redis keys: the hash `keyPrefix + name` (the fenced lock's owner → hold count, `kind` =
 * `leader-election`, `leader` = the identity, `term`), the term counter `relock:term:{name}` (no TTL, never
 * deleted by relock); channels `relock:channel:{name}` (releases, for campaigners) and
 * `relock:channel:{name}:leader` (`<term> <identity>` at each election, for `observe()`).
 */
export class RLeaderElection {
  /** The identity this process publishes when it leads. */
  readonly identity: string;
  private readonly lock: LeaderLock;

  /** @internal Use `LockClient.getLeaderElection(name, options)`. */
  constructor(
    private readonly core: Core,
    /** The election's name, as given to `getLeaderElection()`. */
    readonly name: string,
    options: LeaderElectionOptions = {},
  ) {
    this.identity = checkElectionOptions(options).identity ?? `${hostname()}:${process.pid}`;
    this.lock = new LeaderLock(core, name, this.identity);
  }

  /**
   * Campaigns until this process is elected (etcd's `Campaign`), in a lock context of its own, and resolves
   * with its `Leadership` (term, loss `signal`, `resign()`). Waits without polling, as `RLock.acquire()`
   * does. Redis: the election's hash, its term counter (`INCR`) and a message on its leader channel when
   * elected; its release channel while waiting. Throws `options.signal.reason` when aborted,
   * `InvalidArgumentError` for unknown options, `WrongTypeError` when the name belongs to another kind,
   * `RedisUnavailableError`, `ClientClosedError`.
   */
  async campaign(options: CampaignOptions = {}): Promise<Leadership> {
    const { signal } = checkSignalOptions(options, 'campaign');
    const handle = await runInContext(() => this.lock.acquire(signal ? { signal } : {}));
    return new Leadership(this.name, this.identity, handle, this.core.observe);
  }

  /**
   * The singleton-worker loop (Curator's `LeaderSelector`): campaigns, runs `fn(leadership)` while this
   * process leads, and when the leadership ends (its `signal` aborts) waits for `fn` to return, resigns and
   * campaigns again, until `options.signal` aborts (or the client shuts down); then resigns and resolves.
   * `fn` should stop its work when `leadership.signal` aborts; when it returns while still leading, the
   * leadership is resigned and another campaign starts. A campaign that finds Redis unreachable is tried
   * again a second later. Throws `fn`'s error (after resigning), `InvalidArgumentError`, `WrongTypeError`.
   */
  async run(fn: (leadership: Leadership) => unknown, options: RunLeaderOptions = {}): Promise<void> {
    if (typeof fn !== 'function') throw new InvalidArgumentError('fn', 'must be a function');
    const { signal } = checkSignalOptions(options, 'run');
    const stopped = (): boolean => signal?.aborted === true || this.core.closing.aborted;
    while (!stopped()) {
      const leadership = await this.campaignOrPause(signal);
      if (!leadership) continue;
      const resign = (): void => void leadership.resign().catch((error: unknown) => this.core.log.warn({ election: this.name, err: error }, 'resign failed'));
      signal?.addEventListener('abort', resign, { once: true });
      try {
        await fn(leadership);
      } finally {
        signal?.removeEventListener('abort', resign);
        await leadership.resign().catch((error: unknown) => this.core.log.warn({ election: this.name, err: error }, 'resign failed'));
      }
    }
  }

  /**
   * Who leads now (etcd's `Leader`): the identity the leader published, its term and the milliseconds
   * left on its lease; `undefined` when nobody leads. One read-only script on the election's hash. Throws
   * `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async leader(): Promise<LeaderInfo | undefined> {
    this.core.checkOpen();
    const { lock } = this;
    return this.core.executor.run('leader.read', () => LEADER_READ.run(this.core.connection, { lock: lock.key, kind: 'leader-election' }), {
      idempotent: true,
      expects: { key: lock.key, kind: 'leader-election' },
    });
  }

  /**
   * The leader changes (etcd's `Observe`): an async iterator that first yields the current leader (when
   * there is one), then every election as it happens, from the messages the campaign script publishes on
   * `relock:channel:{name}:leader` (pub/sub, no polling), each term once and in increasing order. A
   * resignation or an expiry is not a change of its own: the next election is. Ends when `options.signal`
   * aborts or the client shuts down (then unsubscribes). Throws `InvalidArgumentError`, and the errors of
   * `leader()` and of subscribing.
   */
  async *observe(options: ObserveOptions = {}): AsyncGenerator<LeaderChange, void, undefined> {
    const { signal } = checkSignalOptions(options, 'observe');
    this.core.checkOpen();
    const { connection, closing } = this.core;
    const queue: LeaderChange[] = [];
    let wake: (() => void) | undefined;
    const listener = (message: string): void => {
      const space = message.indexOf(' ');
      if (space <= 0) return;
      queue.push({ term: BigInt(message.slice(0, space)), identity: message.slice(space + 1) });
      wake?.();
    };
    const ended = (): boolean => signal?.aborted === true || closing.aborted;
    const stop = (): void => wake?.();
    signal?.addEventListener('abort', stop);
    closing.addEventListener('abort', stop);
    await connection.subscribe(this.lock.leaderChannel, listener);
    try {
      let last = -1n;
      const now = await this.leader();
      if (now) {
        last = now.term;
        yield { identity: now.identity, term: now.term };
      }
      while (!ended()) {
        if (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        for (const change of queue.splice(0)) {
          if (change.term <= last) continue;
          last = change.term;
          yield change;
        }
      }
    } finally {
      signal?.removeEventListener('abort', stop);
      closing.removeEventListener('abort', stop);
      await connection.unsubscribe(this.lock.leaderChannel, listener).catch(() => {});
    }
  }

  /** One campaign for `run()`: the leadership, or undefined after a pause when Redis was unreachable or the loop is to end. */
  private async campaignOrPause(signal: AbortSignal | undefined): Promise<Leadership | undefined> {
    try {
      return await this.campaign(signal ? { signal } : {});
    } catch (error) {
      if (signal?.aborted || this.core.closing.aborted) return undefined;
      if (!(error instanceof RedisUnavailableError)) throw error;
      this.core.log.warn({ election: this.name, err: error }, 'campaign failed; campaigning again');
      await pause(RETRY_PAUSE_MS, signal, this.core.closing);
      return undefined;
    }
  }
}

/** Resolves after `ms`, or at once when one of `signals` aborts. */
function pause(ms: number, ...signals: Array<AbortSignal | undefined>): Promise<void> {
  return new Promise((resolve) => {
    const live = signals.filter((s): s is AbortSignal => s !== undefined);
    const done = (): void => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener('abort', done);
      resolve();
    };
    const timer = outsideContexts(() => setLongTimeout(done, ms));
    for (const s of live) s.addEventListener('abort', done, { once: true });
    if (live.some((s) => s.aborted)) done();
  });
}

/** Checks `getLeaderElection`'s options: an object with only `identity`, a non-empty string of at most 200 characters. */
function checkElectionOptions(options: LeaderElectionOptions): LeaderElectionOptions {
  refuseUnknown(options, ['identity'], 'options');
  const { identity } = options;
  if (identity !== undefined && (typeof identity !== 'string' || identity === '' || identity.length > 200)) {
    throw new InvalidArgumentError('options.identity', 'must be a non-empty string of at most 200 characters');
  }
  return options;
}

/** Checks an options object with only `signal` (an AbortSignal). */
function checkSignalOptions(options: { signal?: AbortSignal }, call: string): { signal?: AbortSignal } {
  refuseUnknown(options, ['signal'], `${call}() options`);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new InvalidArgumentError('signal', 'must be an AbortSignal');
  return options;
}
