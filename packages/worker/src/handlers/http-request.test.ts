import { brotliCompressSync, gzipSync } from 'node:zlib';
import { MAX_STREAM_BYTES } from '@tool-dispatch/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../testing/http-test-server.js';
import { makeContext } from '../../testing/workspace.js';
import { httpCall } from '../net/http-client.js';
import { httpRequest } from './http-request.js';

let server: TestServer;
let other: TestServer;

const echo = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, body: string) =>
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ method: req.method, headers: req.headers, body }));

beforeAll(async () => {
  other = await startTestServer({ '/echo': echo });
  server = await startTestServer({
    '/hello': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain', 'x-test': 'yes' }).end('hello'),
    '/echo': echo,
    '/redirect': (_req, res) => res.writeHead(302, { location: '/hello' }).end(),
    '/redirect-abs': (_req, res) => res.writeHead(301, { location: `${server.origin}/hello` }).end(),
    '/redirect-other': (_req, res) => res.writeHead(302, { location: `${other.origin}/echo` }).end(),
    '/redirect-localhost': (_req, res) =>
      res.writeHead(302, { location: `http://localhost:${server.port}/hello` }).end(),
    '/redirect-metadata': (_req, res) =>
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end(),
    '/loop': (_req, res) => res.writeHead(302, { location: '/loop' }).end(),
    '/see-other': (_req, res) => res.writeHead(303, { location: '/echo' }).end(),
    '/temporary': (_req, res) => res.writeHead(307, { location: '/echo' }).end(),
    '/big': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('a'.repeat(MAX_STREAM_BYTES + 100)),
    '/gzip': (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end(gzipSync('unzipped!')),
    '/br': (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'br' }).end(brotliCompressSync('brotli!')),
    '/bomb': (_req, res) =>
      res
        .writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' })
        .end(gzipSync(Buffer.alloc(32 * 1024 * 1024, 'z'))),
    '/binary': (_req, res) =>
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.from([0xff, 0xfe, 0, 1])),
    '/server-error': (_req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('boom'),
    '/slow': () => {},
  });
});
afterAll(async () => {
  await server.close();
  await other.close();
});

const allowBoth = () => makeContext('/nonexistent', { config: { httpAllow: [`127.0.0.1:${server.port}`] } });

describe('http_request', () => {
  it('returns status, headers and body from an allowed local server', async () => {
    const out = await httpRequest({ url: `${server.origin}/hello` }, allowBoth());
    expect(out).toMatchObject({ url: `${server.origin}/hello`, status: 200, body: 'hello' });
    expect(out.headers['x-test']).toBe('yes');
  });

  it('reports a 404 as a normal output', async () => {
    await expect(httpRequest({ url: `${server.origin}/nope` }, allowBoth())).resolves.toMatchObject({
      status: 404,
      body: 'no such page',
    });
  });

  it('reports a 500 as a normal output', async () => {
    await expect(httpRequest({ url: `${server.origin}/server-error` }, allowBoth())).resolves.toMatchObject({
      status: 500,
    });
  });

  it('sends the method, headers and body given', async () => {
    const out = await httpRequest(
      { url: `${server.origin}/echo`, method: 'put', headers: { 'X-Thing': '1' }, body: '{"a":1}' },
      allowBoth(),
    );
    const seen = JSON.parse(out.body);
    expect(seen).toMatchObject({ method: 'PUT', headers: { 'x-thing': '1' }, body: '{"a":1}' });
  });

  it('refuses a loopback server that TD_HTTP_ALLOW does not list, naming the variable', async () => {
    await expect(httpRequest({ url: `${server.origin}/hello` }, makeContext('/nonexistent'))).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/private.*TD_HTTP_ALLOW=127\.0\.0\.1:\d+/s),
    });
    expect(server.hits).not.toContain('/never');
  });

  describe('when the server redirects', () => {
    it('follows relative and absolute redirects to an allowed host', async () => {
      await expect(httpRequest({ url: `${server.origin}/redirect` }, allowBoth())).resolves.toMatchObject({
        url: `${server.origin}/hello`,
        status: 200,
        body: 'hello',
      });
      await expect(httpRequest({ url: `${server.origin}/redirect-abs` }, allowBoth())).resolves.toMatchObject({
        body: 'hello',
      });
    });

    it('refuses a redirect to a loopback port that is not allowed, without connecting to it', async () => {
      await expect(httpRequest({ url: `${server.origin}/redirect-other` }, allowBoth())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(new RegExp(`127\\.0\\.0\\.1:${other.port}.*private`)),
      });
      expect(other.hits).toEqual([]);
    });

    it('refuses a redirect to the same server spelled as localhost (the host as written is matched)', async () => {
      await expect(httpRequest({ url: `${server.origin}/redirect-localhost` }, allowBoth())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/localhost/),
      });
    });

    it('refuses a redirect to the cloud metadata address', async () => {
      await expect(httpRequest({ url: `${server.origin}/redirect-metadata` }, allowBoth())).rejects.toMatchObject({
        message: expect.stringMatching(/169\.254\.169\.254.*private/),
      });
    });

    it('gives up after 10 redirects', async () => {
      await expect(httpRequest({ url: `${server.origin}/loop` }, allowBoth())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/stopped after 10 redirects/),
      });
    });

    it('turns a POST into a GET without body on 303', async () => {
      const out = await httpRequest({ url: `${server.origin}/see-other`, method: 'POST', body: 'x' }, allowBoth());
      expect(JSON.parse(out.body)).toMatchObject({ method: 'GET', body: '' });
    });

    it('keeps method and body on 307', async () => {
      const out = await httpRequest({ url: `${server.origin}/temporary`, method: 'POST', body: 'x' }, allowBoth());
      expect(JSON.parse(out.body)).toMatchObject({ method: 'POST', body: 'x' });
    });

    it('drops credentials when a redirect leaves the origin', async () => {
      const ctx = makeContext('/nonexistent', { config: { httpAllow: ['127.0.0.1'] } });
      const out = await httpRequest(
        { url: `${server.origin}/redirect-other`, headers: { Authorization: 'Bearer s3cret', 'X-Keep': 'k' } },
        ctx,
      );
      const seen = JSON.parse(out.body);
      expect(seen.headers.authorization).toBeUndefined();
      expect(seen.headers['x-keep']).toBe('k');
    });
  });

  it('cuts the body at MAX_STREAM_BYTES and flags it truncated', async () => {
    const out = await httpRequest({ url: `${server.origin}/big` }, allowBoth());
    expect(out.body).toHaveLength(MAX_STREAM_BYTES);
    expect(out.truncated).toBe(true);
  });

  it('decompresses a gzip body', async () => {
    await expect(httpRequest({ url: `${server.origin}/gzip` }, allowBoth())).resolves.toMatchObject({
      body: 'unzipped!',
    });
  });

  it('decompresses a brotli body', async () => {
    await expect(httpRequest({ url: `${server.origin}/br` }, allowBoth())).resolves.toMatchObject({ body: 'brotli!' });
  });

  it('stops inflating a compression bomb at MAX_STREAM_BYTES', async () => {
    const out = await httpRequest({ url: `${server.origin}/bomb` }, allowBoth());
    expect(out.body).toHaveLength(MAX_STREAM_BYTES);
    expect(out.truncated).toBe(true);
  });

  it('returns a body that is not text as base64', async () => {
    await expect(httpRequest({ url: `${server.origin}/binary` }, allowBoth())).resolves.toMatchObject({
      body: Buffer.from([0xff, 0xfe, 0, 1]).toString('base64'),
      bodyEncoding: 'base64',
    });
  });

  describe('when the signal aborts', () => {
    it('fails with timeout when the deadline passes', async () => {
      const ctx = makeContext('/nonexistent', {
        signal: AbortSignal.timeout(200),
        config: { httpAllow: [`127.0.0.1:${server.port}`] },
      });
      await expect(httpRequest({ url: `${server.origin}/slow` }, ctx)).rejects.toMatchObject({ code: 'timeout' });
    });

    it('fails with cancelled when the caller aborts', async () => {
      const controller = new AbortController();
      const ctx = makeContext('/nonexistent', {
        signal: controller.signal,
        config: { httpAllow: [`127.0.0.1:${server.port}`] },
      });
      setTimeout(() => controller.abort(), 100);
      await expect(httpRequest({ url: `${server.origin}/slow` }, ctx)).rejects.toMatchObject({ code: 'cancelled' });
    });
  });

  it('says which request failed when nothing listens', async () => {
    const closed = await startTestServer({});
    await closed.close();
    const ctx = makeContext('/nonexistent', { config: { httpAllow: [`127.0.0.1:${closed.port}`] } });
    await expect(httpRequest({ url: `${closed.origin}/x` }, ctx)).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/the request to .* failed: .*ECONNREFUSED/),
    });
  });

  it('refuses a body on GET', async () => {
    await expect(httpRequest({ url: `${server.origin}/echo`, body: 'x' }, allowBoth())).rejects.toMatchObject({
      message: 'a GET request cannot have a body',
    });
  });
});

describe('httpCall', () => {
  it('connects to the address it checked, not to a fresh DNS answer (DNS rebinding)', async () => {
    // The system resolver knows nothing of this name: the connection can only succeed through
    // the pinned lookup, which answers with the address the guard checked.
    const resolveHost = async () => [{ address: '127.0.0.1', family: 4 }];
    const out = await httpCall(
      { url: `http://pinned.invalid:${server.port}/hello`, method: 'GET', headers: {} },
      { signal: AbortSignal.timeout(5000), allow: [`pinned.invalid:${server.port}`], resolveHost },
    );
    expect(out.body.toString()).toBe('hello');
  });

  it('refuses a name whose checked address is private when not allowed', async () => {
    const resolveHost = async () => [{ address: '127.0.0.1', family: 4 }];
    await expect(
      httpCall(
        { url: `http://pinned.invalid:${server.port}/hello`, method: 'GET', headers: {} },
        { signal: AbortSignal.timeout(5000), allow: [], resolveHost },
      ),
    ).rejects.toMatchObject({ message: expect.stringMatching(/resolves to 127\.0\.0\.1/) });
  });
});
