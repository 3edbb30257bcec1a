import { createServer, type IncomingMessage } from 'node:http';

/** What a fake model server answers one request with. */
export interface JsonReply {
  status: number;
  body: unknown;
}

export interface Loopback {
  /** e.g. `http://127.0.0.1:40123`. */
  url: string;
  close(): Promise<void>;
}

/**
 * A JSON-over-HTTP server on a free loopback port: each POST body is parsed and handed to
 * `handle` with the path; a body that is not JSON gets 400, a throw 500, both with the message.
 */
export async function serveJson(handle: (path: string, body: unknown) => JsonReply): Promise<Loopback> {
  const server = createServer(async function fakeModelRequest(req, res) {
    let reply: JsonReply;
    try {
      reply = handle(req.url ?? '/', JSON.parse(await readBody(req)));
    } catch (e) {
      const status = e instanceof SyntaxError ? 400 : 500;
      reply = { status, body: { error: { message: e instanceof Error ? e.message : String(e) } } };
    }
    res.writeHead(reply.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(reply.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the fake model server has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/** A 400 in the shape the model APIs use, for a request the real API would refuse too. */
export function badRequest(message: string): JsonReply {
  return { status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message } } };
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
