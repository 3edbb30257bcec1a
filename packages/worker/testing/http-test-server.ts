import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Route = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** A real HTTP server on 127.0.0.1 with a random port, for tests only. @internal */
export interface TestServer {
  port: number;
  origin: string;
  /** Paths requested so far, in order. */
  hits: string[];
  close: () => Promise<void>;
}

/** Starts a server answering `routes` by path (404 for others). @internal */
export async function startTestServer(routes: Record<string, Route>): Promise<TestServer> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      hits.push(path);
      const route = routes[path];
      if (route) route(req, res, Buffer.concat(chunks).toString('utf8'));
      else res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
