/**
 * A TCP proxy for fault tests (no firewall rules needed): forwards a local port to a target, and can add
 * latency, blackhole traffic (read and drop, keep the sockets open: a silent partition), or reset every
 * connection.
 */
import { createServer, Socket, type Server } from 'node:net';

export type ProxyMode = 'pass' | 'blackhole';

export interface TcpProxy {
  readonly port: number;
  mode: ProxyMode;
  /** Milliseconds added to every chunk in each direction. */
  latencyMs: number;
  /** Destroys every open connection with a TCP reset. */
  resetAll(): void;
  close(): Promise<void>;
}

export async function startProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const proxy: TcpProxy = {
    port: 0,
    mode: 'pass',
    latencyMs: 0,
    resetAll: () => {
      for (const socket of sockets) socket.resetAndDestroy();
      sockets.clear();
    },
    close: () => {
      proxy.resetAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const forward = (from: Socket, to: Socket): void => {
    from.on('data', (chunk) => {
      if (proxy.mode === 'blackhole') return;
      if (proxy.latencyMs > 0) setTimeout(() => to.writable && to.write(chunk), proxy.latencyMs);
      else if (to.writable) to.write(chunk);
    });
  };
  const server: Server = createServer({ noDelay: true }, (client) => {
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
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (proxy as { port: number }).port = (server.address() as { port: number }).port;
  return proxy;
}
