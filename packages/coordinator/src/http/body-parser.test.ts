import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { discardRequestBody } from './body-parser.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server that drops the body (within the caps) and answers 413, as the API does for oversized bodies. */
async function refusingServer(maxBytes: number, seen: { discarded: boolean }): Promise<string> {
  server = createServer(async function refuseBody(req, res) {
    await discardRequestBody(req, maxBytes, 5_000);
    seen.discarded = true;
    res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
    res.end('{"error":{"code":"payload_too_large","message":"too large"}}');
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
}

describe('discardRequestBody', () => {
  it('reads the rest of an upload so a fetch client gets the 413 instead of EPIPE', async () => {
    const seen = { discarded: false };
    const url = await refusingServer(64 * 1024 * 1024, seen);
    const res = await fetch(url, { method: 'POST', body: 'x'.repeat(8 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    expect(seen.discarded).toBe(true);
  });

  it('stops reading at its byte cap', async () => {
    const seen = { discarded: false };
    const url = await refusingServer(1024, seen);
    await fetch(url, { method: 'POST', body: 'x'.repeat(8 * 1024 * 1024) }).catch(() => undefined);
    expect(seen.discarded).toBe(true);
  });

  it('resolves at once for a request whose body was read already', async () => {
    server = createServer(async function readThenDiscard(req, res) {
      for await (const _chunk of req) {
        // read it all
      }
      // Settled before the next turn of the event loop: no listener, no 5 s timer.
      const first = await Promise.race([
        discardRequestBody(req, 1024, 5_000).then(() => 'resolved'),
        new Promise((resolve) => setImmediate(() => resolve('waiting'))),
      ]);
      res.end(String(first));
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: 'small' });
    expect(await res.text()).toBe('resolved');
  });
});
