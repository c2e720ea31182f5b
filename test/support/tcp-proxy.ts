/**
 * A TCP proxy for fault tests (no firewall rules needed): forwards a local port to a target, and can add
 * latency, blackhole traffic (read and drop, keep the sockets open: a silent partition), reset every
 * connection, or lose the reply to one request (the command runs in Redis, the client never hears).
 */
import { createServer, Socket, type Server } from 'node:net';

export type ProxyMode = 'pass' | 'blackhole';

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
   * Arms a one-shot loss: the next request chunk a client sends that `match`es is forwarded to Redis as
   * usual; when the reply comes back, it is dropped and that connection reset, so the command ran but its
   * caller sees the socket close with the command in flight (an ambiguous outcome). A `NOSCRIPT` reply
   * (the script did not run) is let through and the loss stays armed for the client's `EVAL`. Resolves
   * once a reply was dropped.
   */
  loseReply(match: (request: Buffer) => boolean): Promise<void>;
  /** Disarms a `loseReply` that found no request yet (its promise never resolves). */
  disarm(): void;
  close(): Promise<void>;
}

export async function startProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let loss: { match: (request: Buffer) => boolean; done: () => void } | undefined;
  let repliesLost = 0;
  const proxy: TcpProxy = {
    port: 0,
    mode: 'pass',
    latencyMs: 0,
    get repliesLost() {
      return repliesLost;
    },
    resetAll: () => {
      for (const socket of sockets) socket.resetAndDestroy();
      sockets.clear();
    },
    loseReply: (match) => new Promise((resolve) => (loss = { match, done: resolve })),
    disarm: () => {
      loss = undefined;
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
    const upstream = new Socket();
    upstream.setNoDelay(true);
    sockets.add(client);
    sockets.add(upstream);
    /** The armed loss, once a request of this connection matched it: its reply is the one to drop. */
    let dropping: { match: (request: Buffer) => boolean; done: () => void } | undefined;
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
      if (loss && proxy.mode !== 'blackhole' && loss.match(chunk)) {
        dropping = loss;
        loss = undefined;
      }
      write(upstream, chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!dropping) return write(client, chunk);
      const armed = dropping;
      dropping = undefined;
      // A script Redis did not know yet did not run: let the client send it again with EVAL, and lose that reply.
      if (chunk.toString('latin1', 0, 9) === '-NOSCRIPT') {
        loss ??= armed;
        return write(client, chunk);
      }
      repliesLost++;
      client.resetAndDestroy();
      drop();
      armed.done();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (proxy as { port: number }).port = (server.address() as { port: number }).port;
  return proxy;
}
