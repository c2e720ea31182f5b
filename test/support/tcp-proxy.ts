/**
 * A TCP proxy for fault tests (no firewall rules needed): forwards a local port to a target, and can add
 * latency, blackhole traffic (read and drop, keep the sockets open: a silent partition), reset every
 * connection, or lose one reply (`cutReply`).
 */
import { createServer, Socket, type Server } from 'node:net';

export type ProxyMode = 'pass' | 'blackhole';

/** A one-shot cut: see `TcpProxy.cutReply`. */
export interface CutRule {
  /** Text the request must contain (latin1), e.g. a script's SHA. */
  match: string;
  /**
   * Cut only when the reply starts with this (or one of these: `['$-1\r\n', '_\r\n']`, a nil reply in
   * RESP2 or RESP3, a granted RLock acquire); otherwise let it through and stay armed.
   */
  replyPrefix?: string | readonly string[];
  /** After the cut, refuse (reset) new connections for this many ms: the client cannot retry at once. */
  refuseMs?: number;
}

export interface TcpProxy {
  readonly port: number;
  mode: ProxyMode;
  /** Milliseconds added to every chunk in each direction. */
  latencyMs: number;
  /** Destroys every open connection with a TCP reset. */
  resetAll(): void;
  /**
   * Arms a one-shot cut: the next request that contains `rule.match` is forwarded to Redis, Redis's reply
   * is dropped and that connection reset (the command ran, the client cannot know: a lost reply).
   * Resolves when the cut happened.
   */
  cutReply(rule: CutRule): Promise<void>;
  close(): Promise<void>;
}

export async function startProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let cut: { rule: CutRule; done: () => void } | undefined;
  let refuseUntil = 0;
  const proxy: TcpProxy = {
    port: 0,
    mode: 'pass',
    latencyMs: 0,
    resetAll: () => {
      for (const socket of sockets) socket.resetAndDestroy();
      sockets.clear();
    },
    cutReply: (rule) => new Promise<void>((resolve) => (cut = { rule, done: resolve })),
    close: () => {
      proxy.resetAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const forward = (from: Socket, to: Socket, onChunk: (chunk: Buffer) => boolean): void => {
    from.on('data', (chunk) => {
      if (proxy.mode === 'blackhole' || !onChunk(chunk)) return;
      if (proxy.latencyMs > 0) setTimeout(() => to.writable && to.write(chunk), proxy.latencyMs);
      else if (to.writable) to.write(chunk);
    });
  };
  const server: Server = createServer({ noDelay: true }, (client) => {
    if (performance.now() < refuseUntil) {
      client.resetAndDestroy();
      return;
    }
    const upstream = new Socket();
    upstream.setNoDelay(true);
    sockets.add(client);
    sockets.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    upstream.connect(targetPort, targetHost);
    /** A request matching the armed cut went up on this connection: its reply decides. */
    let cutPending = false;
    forward(client, upstream, (chunk) => {
      if (cut && chunk.includes(cut.rule.match, 0, 'latin1')) cutPending = true;
      return true;
    });
    forward(upstream, client, (chunk) => {
      if (!cutPending || !cut) return true;
      const { rule, done } = cut;
      cutPending = false;
      const prefixes = rule.replyPrefix === undefined ? [] : [rule.replyPrefix].flat();
      if (prefixes.length > 0 && !prefixes.some((prefix) => chunk.subarray(0, prefix.length).toString('latin1') === prefix)) return true;
      cut = undefined;
      if (rule.refuseMs) refuseUntil = performance.now() + rule.refuseMs;
      client.resetAndDestroy();
      upstream.resetAndDestroy();
      sockets.delete(client);
      sockets.delete(upstream);
      done();
      return false;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (proxy as { port: number }).port = (server.address() as { port: number }).port;
  return proxy;
}
