/**
 * A TCP proxy between one worker and the Redis under test, controlled by the orchestrator (no tc netem
 * or toxiproxy on this machine). Every connection the worker opens (commands and subscriber) gets its own
 * upstream connection. Modes, for all connections at once:
 * - `pass`: forward bytes as they come;
 * - `latency`: deliver each chunk `ms` later, in order, both ways;
 * - `blackhole`: hold every byte, both ways, without closing (a partition as TCP sees it: nothing
 *   arrives, nothing fails); what was held is delivered when the mode changes, as TCP retransmission
 *   would after a partition heals (dropping bytes inside a stream would corrupt RESP framing, which no
 *   real network does);
 * - `reset`: reset every connection (RST) and every new one until the mode changes.
 * A one-shot cut forwards a request that contains a marker (a script's SHA), waits for Redis's reply,
 * drops it and resets the connection: the command ran, the client cannot know (an ambiguous outcome).
 * A subscriber cut (`severSubscribers`) resets the connections that sent a SUBSCRIBE and refuses every new
 * connection until `restoreSubscribers`: the worker's commands go on, its pub/sub is down for as long as
 * the orchestrator says (a `CLIENT KILL` alone is healed by the client within milliseconds).
 */
import { createServer, Socket, type Server } from 'node:net';
import { now } from './history.js';

export type ProxyMode = { kind: 'pass' } | { kind: 'latency'; ms: number } | { kind: 'blackhole' } | { kind: 'reset' };

/** A one-shot cut: see the module comment. */
export interface CutRule {
  /** Text the request must contain (latin1), e.g. a script SHA. */
  match: string;
  /** Cut only when the reply starts with this (e.g. a granted acquire), else let it through and stay armed. */
  replyPrefix?: string;
  /** After the cut, reset new connections for this long (the client cannot retry: an orphan). */
  refuseMs?: number;
}

/** One direction of a connection: chunks in order, each released at its time (Infinity: held). */
class Pipe {
  private readonly queue: Array<{ chunk: Buffer; at: number }> = [];
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly target: Socket) {}

  push(chunk: Buffer, delayMs: number): void {
    const last = this.queue.at(-1)?.at ?? 0;
    this.queue.push({ chunk, at: Math.max(last, delayMs === Infinity ? Infinity : now() + delayMs) });
    this.pump();
  }

  /** Releases held chunks now. */
  heal(): void {
    const t = now();
    for (const entry of this.queue) if (entry.at === Infinity) entry.at = t;
    this.pump();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }

  private pump(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const t = now();
    while (this.queue.length > 0 && this.queue[0].at <= t) {
      const { chunk } = this.queue.shift()!;
      if (!this.target.destroyed) this.target.write(chunk);
    }
    const next = this.queue[0]?.at;
    if (next !== undefined && next !== Infinity) this.timer = setTimeout(() => this.pump(), Math.max(0, next - t));
  }
}

interface Pair {
  down: Socket;
  up: Socket;
  toUp: Pipe;
  toDown: Pipe;
  /** A request matching the armed cut was forwarded on this connection; its reply decides. */
  cutPending: boolean;
  /** The client sent a SUBSCRIBE on this connection (its pub/sub connection). */
  subscriber: boolean;
}

const SUBSCRIBE = ['SUBSCRIBE', 'subscribe'];

export class Proxy {
  private readonly pairs = new Set<Pair>();
  private mode: ProxyMode = { kind: 'pass' };
  private refuseUntil = 0;
  /** Subscriber connections are cut: new connections are refused (see `severSubscribers`). */
  private severed = false;
  private cut: { rule: CutRule; resolve: (t: number) => void } | undefined;
  /** Connections accepted, reset by a fault, and cuts done (for the report). */
  readonly counts = { connections: 0, resets: 0, cuts: 0 };

  private constructor(private readonly server: Server, readonly port: number, private readonly upstreamPort: number) {
    server.on('connection', (down) => this.accept(down));
  }

  static async start(upstreamPort: number): Promise<Proxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (typeof address !== 'object' || !address) throw new Error('proxy: no port');
    return new Proxy(server, address.port, upstreamPort);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Switches every connection to `mode`; leaving `blackhole` delivers what was held. */
  setMode(mode: ProxyMode): void {
    this.mode = mode;
    if (mode.kind === 'reset') {
      for (const pair of [...this.pairs]) this.destroy(pair, true);
    } else if (mode.kind !== 'blackhole') {
      for (const pair of this.pairs) {
        pair.toUp.heal();
        pair.toDown.heal();
      }
    }
  }

  /** Arms a one-shot cut; resolves with the time of the cut. */
  armCut(rule: CutRule): Promise<number> {
    return new Promise((resolve) => (this.cut = { rule, resolve }));
  }

  /**
   * Resets every connection that sent a SUBSCRIBE and refuses new connections (the client's reconnect)
   * until `restoreSubscribers()`; the connections that carry commands stay. Returns how many were reset.
   */
  severSubscribers(): number {
    this.severed = true;
    const subscribers = [...this.pairs].filter((pair) => pair.subscriber);
    for (const pair of subscribers) this.destroy(pair, true);
    return subscribers.length;
  }

  /** Ends `severSubscribers()`: new connections (the subscriber's reconnect) are accepted again. */
  restoreSubscribers(): void {
    this.severed = false;
  }

  /** Disarms a cut that did not happen. */
  disarm(): void {
    this.cut = undefined;
    for (const pair of this.pairs) pair.cutPending = false;
  }

  async close(): Promise<void> {
    this.disarm();
    for (const pair of [...this.pairs]) this.destroy(pair, false);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(down: Socket): void {
    this.counts.connections++;
    if (this.mode.kind === 'reset' || this.severed || now() < this.refuseUntil) {
      this.counts.resets++;
      down.resetAndDestroy();
      return;
    }
    const up = new Socket();
    const pair: Pair = { down, up, toUp: new Pipe(up), toDown: new Pipe(down), cutPending: false, subscriber: false };
    this.pairs.add(pair);
    down.setNoDelay(true);
    up.setNoDelay(true);
    up.connect(this.upstreamPort, '127.0.0.1');
    down.on('data', (chunk) => {
      if (this.cut && chunk.includes(this.cut.rule.match, 0, 'latin1')) pair.cutPending = true;
      if (!pair.subscriber && SUBSCRIBE.some((verb) => chunk.includes(verb, 0, 'latin1'))) pair.subscriber = true;
      pair.toUp.push(chunk, this.delay());
    });
    up.on('data', (chunk) => {
      if (pair.cutPending && this.cut) {
        const { rule, resolve } = this.cut;
        if (rule.replyPrefix === undefined || chunk.subarray(0, rule.replyPrefix.length).toString('latin1') === rule.replyPrefix) {
          this.cut = undefined;
          this.counts.cuts++;
          if (rule.refuseMs) this.refuseUntil = now() + rule.refuseMs;
          this.destroy(pair, true);
          resolve(now());
          return;
        }
        pair.cutPending = false;
      }
      pair.toDown.push(chunk, this.delay());
    });
    const end = (): void => this.destroy(pair, false);
    down.on('error', end);
    up.on('error', end);
    down.on('close', end);
    up.on('close', end);
  }

  private delay(): number {
    if (this.mode.kind === 'blackhole') return Infinity;
    return this.mode.kind === 'latency' ? this.mode.ms : 0;
  }

  private destroy(pair: Pair, reset: boolean): void {
    if (!this.pairs.delete(pair)) return;
    if (reset) this.counts.resets++;
    pair.toUp.stop();
    pair.toDown.stop();
    for (const socket of [pair.down, pair.up]) {
      if (socket.destroyed) continue;
      if (reset && socket.readyState === 'open') socket.resetAndDestroy();
      else socket.destroy();
    }
  }
}
