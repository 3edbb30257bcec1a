import type { AddressInfo } from 'node:net';
import { createConnection, createServer, type Socket } from 'node:net';

/** A loopback TCP proxy the test controls: added latency per chunk, and dropping every connection at once. */
export interface TcpProxy {
  port: number;
  /** Delay (ms) added to every chunk, both ways; 0 to stop. */
  setLatency(ms: number): void;
  /** Destroys every proxied connection now (the clients see a dropped connection and reconnect). */
  dropAll(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  let latencyMs = 0;
  const pairs = new Set<[Socket, Socket]>();
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      if (latencyMs === 0) to.write(chunk);
      // Equal delays keep the order (timers of one duration fire in the order they were set).
      else setTimeout(() => to.writable && to.write(chunk), latencyMs);
    });
  };
  const server = createServer(function proxyConnection(client) {
    const upstream = createConnection({ host: targetHost, port: targetPort });
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const close = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    setLatency: (ms) => {
      latencyMs = ms;
    },
    dropAll: () => {
      const n = pairs.size;
      for (const [a, b] of [...pairs]) {
        a.destroy();
        b.destroy();
      }
      pairs.clear();
      return n;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const [a, b] of pairs) {
          a.destroy();
          b.destroy();
        }
        server.close(() => resolve());
      }),
  };
}
