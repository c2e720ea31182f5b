/**
 * A TCP proxy for fault tests (no firewall rules needed): forwards a local port to a target, and can add
 * latency, blackhole traffic (read and drop, keep the sockets open: a silent partition), reset every
 * connection, lose the reply to one request (`loseReply`: the command runs in Redis, the client never
 * hears), or refuse one request (`refuseRequest`: the connection is reset before it reaches Redis).
 */
import { createServer, Socket, type Server } from 'node:net';

export type ProxyMode = 'pass' | 'blackhole';

/** A one-shot loss: see `TcpProxy.loseReply`. */
export interface LossRule {
  /** The request whose reply is lost: text it contains (latin1, e.g. a script's SHA) or a test of its bytes. */
  match: string | ((request: Buffer) => boolean);
  /**
   * Lose the reply only when it starts with this (or one of these: `['$-1\r\n', '_\r\n']`, a nil reply in
   * RESP2 or RESP3, a granted RLock acquire); otherwise let it through and stay armed.
   */
  replyPrefix?: string | readonly string[];
  /** After the loss, refuse (reset) new connections for this many ms: the client cannot retry at once. */
  refuseMs?: number;
}

export interface TcpProxy {
  readonly port: number;
  mode: ProxyMode;
  /** Milliseconds added to every chunk in each direction. */
  latencyMs: number;
  /** Replies lost so far by `loseReply`. */
  readonly repliesLost: number;
  /** Destroys every open connection with a TCP reset. */
  resetAll(): void;
  /**
   * Arms a one-shot loss: the next request chunk a client sends that matches `rule.match` is forwarded to
   * Redis as usual; when its reply comes back, it is dropped and that connection reset, so the command ran
   * but its caller sees the socket close with the command in flight (an ambiguous outcome). A `NOSCRIPT`
   * reply (the script did not run), or a reply without `rule.replyPrefix`, is let through and the loss
   * stays armed (for the client's `EVAL`, or its next attempt). Resolves once a reply was dropped.
   */
  loseReply(rule: LossRule): Promise<void>;
  /**
   * Arms a one-shot refusal: the next request chunk a client sends that contains `match` (latin1, e.g. a
   * script's SHA) is not forwarded, and its connection is reset: the command did not run, its caller sees
   * the socket close with it in flight (a first attempt that fails without running). Resolves once done.
   */
  refuseRequest(match: string): Promise<void>;
  /** Called with every request chunk a client sends (blackholed or not), for tests that watch what goes to Redis; none by default. */
  onRequest: ((request: Buffer) => void) | undefined;
  /**
   * Called with every reply chunk Redis sends, after it was passed on (or dropped): a mode or latency set
   * here applies from the next chunk on, never to this one. None by default.
   */
  onReply: ((reply: Buffer) => void) | undefined;
  /** Disarms a `loseReply` or `refuseRequest` that found no request yet (its promise never resolves). */
  disarm(): void;
  close(): Promise<void>;
}

interface Loss {
  readonly matches: (request: Buffer) => boolean;
  readonly rule: LossRule;
  readonly done: () => void;
}

/**
 * A TCP reset of `socket`, or a plain close once its own end is under way: Node cannot reset a socket that
 * is shutting down (its `resetAndDestroy()` emits `reset EINVAL` and never closes the handle, which then
 * keeps the process alive: issue 17). A socket still connecting is reset once it connects.
 */
function reset(socket: Socket): void {
  if (socket.writableEnded) socket.destroy();
  else socket.resetAndDestroy();
}

export async function startProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let loss: Loss | undefined;
  let refusal: { match: string; done: () => void } | undefined;
  let repliesLost = 0;
  let refuseUntil = 0;
  const proxy: TcpProxy = {
    port: 0,
    mode: 'pass',
    latencyMs: 0,
    onRequest: undefined,
    onReply: undefined,
    get repliesLost() {
      return repliesLost;
    },
    resetAll: () => {
      for (const socket of sockets) reset(socket);
      sockets.clear();
    },
    loseReply: (rule) =>
      new Promise((resolve) => {
        const { match } = rule;
        const matches = typeof match === 'string' ? (request: Buffer) => request.includes(match, 0, 'latin1') : match;
        loss = { matches, rule, done: resolve };
      }),
    refuseRequest: (match) =>
      new Promise((resolve) => {
        refusal = { match, done: resolve };
      }),
    disarm: () => {
      loss = undefined;
      refusal = undefined;
    },
    close: () => {
      proxy.resetAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const write = (to: Socket, chunk: Buffer): void => {
    if (proxy.mode === 'blackhole') return;
    if (proxy.latencyMs > 0) setTimeout(() => to.writable && to.write(chunk), proxy.latencyMs);
    else if (to.writable) to.write(chunk);
  };
  const server: Server = createServer({ noDelay: true }, (client) => {
    if (performance.now() < refuseUntil) {
      reset(client);
      return;
    }
    const upstream = new Socket();
    upstream.setNoDelay(true);
    sockets.add(client);
    sockets.add(upstream);
    /** The armed loss, once a request of this connection matched it: its reply is the one to drop. */
    let dropping: Loss | undefined;
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    upstream.connect(targetPort, targetHost);
    client.on('data', (chunk: Buffer) => {
      proxy.onRequest?.(chunk);
      if (refusal && proxy.mode !== 'blackhole' && chunk.includes(refusal.match, 0, 'latin1')) {
        const refused = refusal;
        refusal = undefined;
        reset(client);
        drop();
        refused.done();
        return;
      }
      if (loss && proxy.mode !== 'blackhole' && loss.matches(chunk)) {
        dropping = loss;
        loss = undefined;
      }
      write(upstream, chunk);
    });
    const passReply = (chunk: Buffer): void => {
      if (!dropping) return write(client, chunk);
      const armed = dropping;
      dropping = undefined;
      const prefixes = armed.rule.replyPrefix === undefined ? [] : [armed.rule.replyPrefix].flat();
      const wanted = prefixes.length === 0 || prefixes.some((prefix) => chunk.toString('latin1', 0, prefix.length) === prefix);
      // A script Redis did not know yet did not run (the client sends it again with EVAL), and a reply
      // that is not the one asked for passes: the loss stays armed for the next matching request.
      if (chunk.toString('latin1', 0, 9) === '-NOSCRIPT' || !wanted) {
        loss ??= armed;
        return write(client, chunk);
      }
      repliesLost++;
      if (armed.rule.refuseMs) refuseUntil = performance.now() + armed.rule.refuseMs;
      reset(client);
      drop();
      armed.done();
    };
    upstream.on('data', (chunk: Buffer) => {
      passReply(chunk);
      proxy.onReply?.(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (proxy as { port: number }).port = (server.address() as { port: number }).port;
  return proxy;
}
