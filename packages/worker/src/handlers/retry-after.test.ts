import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../testing/http-test-server.js';
import { makeContext } from '../../testing/workspace.js';
import { fetchPage } from './fetch-page.js';
import { httpRequest } from './http-request.js';
import { retryAfterMs } from './retry-after.js';

// API.md v1.2: a GET answered 429/503 with a Retry-After that fits in the deadline is tried again
// after it, at most twice; a non-GET http_request carries the call's Idempotency-Key.

let server: TestServer;
const tries = new Map<string, number>();
const keys: (string | undefined)[] = [];

/** `/busy/<tag>/<k>/<code>/<seconds>`: the first k requests answer code with Retry-After: seconds, then 200. */
beforeAll(async () => {
  const busy = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    const [, , tag = '', k = '0', code = '429', seconds = '1'] = String(req.url).split('/');
    const n = (tries.get(tag) ?? 0) + 1;
    tries.set(tag, n);
    if (n <= Number(k))
      res.writeHead(Number(code), { 'retry-after': seconds, 'content-type': 'text/plain' }).end('busy');
    else res.writeHead(200, { 'content-type': 'text/plain' }).end(`ok after ${n}`);
  };
  const routes: Record<string, typeof busy> = {
    '/key': (req, res) => {
      keys.push(req.headers['idempotency-key'] as string | undefined);
      res.writeHead(200).end('ok');
    },
  };
  for (const tag of ['a', 'b', 'c', 'd', 'e', 'f'])
    for (const spec of ['1/429/0', '2/503/0', '5/429/0', '1/429/30', '1/503/0']) routes[`/busy/${tag}/${spec}`] = busy;
  server = await startTestServer(routes);
});
afterAll(() => server.close());

const ctx = (timeoutMs = 60_000) =>
  makeContext('/nonexistent', { timeoutMs, config: { httpAllow: [`127.0.0.1:${server.port}`] } });
const url = (p: string) => `${server.origin}${p}`;

describe('Retry-After on a GET', () => {
  it('tries a GET again after a 429 and a 503 with Retry-After, and takes the answer that follows', async () => {
    const out = await httpRequest({ url: url('/busy/a/2/503/0') }, ctx());
    expect(out.status).toBe(200);
    expect(tries.get('a')).toBe(3);
    const page = await fetchPage({ url: url('/busy/b/1/429/0') }, ctx());
    expect(page.status).toBe(200);
    expect(tries.get('b')).toBe(2);
  });

  it('tries at most twice, then answers the 429 as it is', async () => {
    const out = await httpRequest({ url: url('/busy/c/5/429/0') }, ctx());
    expect(out.status).toBe(429);
    expect(tries.get('c')).toBe(3);
  });

  it('does not wait past the deadline: a Retry-After beyond it is answered at once', async () => {
    const out = await httpRequest({ url: url('/busy/d/1/429/30') }, ctx(5_000));
    expect(out.status).toBe(429);
    expect(tries.get('d')).toBe(1);
  });

  it('never sends a non-GET again', async () => {
    const out = await httpRequest({ url: url('/busy/e/1/503/0'), method: 'POST', body: 'x' }, ctx());
    expect(out.status).toBe(503);
    expect(tries.get('e')).toBe(1);
  });

  it('reads delay-seconds and HTTP dates', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(new Date(Date.now() + 10_000).toUTCString())).toBeGreaterThan(8000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});

describe('Idempotency-Key on http_request', () => {
  it('sends the call key on a non-GET, none on a GET, and keeps a key the call sets', async () => {
    keys.length = 0;
    const c = makeContext('/nonexistent', {
      idempotencyKey: 'td_key_1',
      config: { httpAllow: [`127.0.0.1:${server.port}`] },
    });
    await httpRequest({ url: url('/key'), method: 'POST', body: 'x' }, c);
    await httpRequest({ url: url('/key'), method: 'DELETE' }, c);
    await httpRequest({ url: url('/key') }, c);
    await httpRequest({ url: url('/key'), method: 'PUT', body: 'x', headers: { 'idempotency-key': 'mine' } }, c);
    expect(keys).toEqual(['td_key_1', 'td_key_1', undefined, 'mine']);
  });
});
