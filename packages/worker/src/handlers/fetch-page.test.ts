import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../testing/http-test-server.js';
import { makeContext } from '../../testing/workspace.js';
import { fetchPage } from './fetch-page.js';

let server: TestServer;
let other: TestServer;

const PAGE = `<!doctype html><html><head><title>Test &amp; page</title>
<script>var secret = 1;</script><style>body { color: red }</style></head>
<body><h1>Heading</h1><p>First   paragraph with <a href="/x">a link</a>.</p><p>Caf&eacute; &lt;ok&gt;</p></body></html>`;

beforeAll(async () => {
  other = await startTestServer({ '/': (_req, res) => res.writeHead(200).end('other') });
  server = await startTestServer({
    '/page': (_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE),
    '/moved': (_req, res) => res.writeHead(301, { location: '/page' }).end(),
    '/away': (_req, res) => res.writeHead(302, { location: `${other.origin}/` }).end(),
    '/plain': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('  just text  '),
    '/latin1': (_req, res) =>
      res
        .writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' })
        .end(Buffer.from([0x63, 0x61, 0x66, 0xe9])),
    '/image': (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0x89, 0x50, 0xff])),
  });
});
afterAll(async () => {
  await server.close();
  await other.close();
});

const ctx = () => makeContext('/nonexistent', { config: { httpAllow: [`127.0.0.1:${server.port}`] } });

describe('fetch_page', () => {
  it('reduces HTML to readable text and returns the title', async () => {
    await expect(fetchPage({ url: `${server.origin}/page` }, ctx())).resolves.toEqual({
      url: `${server.origin}/page`,
      status: 200,
      title: 'Test & page',
      text: 'Heading\n\nFirst paragraph with a link.\n\nCafé <ok>',
    });
  });

  it('returns the final URL after redirects', async () => {
    await expect(fetchPage({ url: `${server.origin}/moved` }, ctx())).resolves.toMatchObject({
      url: `${server.origin}/page`,
      status: 200,
    });
  });

  it('refuses a redirect to a loopback port that is not allowed', async () => {
    await expect(fetchPage({ url: `${server.origin}/away` }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: expect.stringMatching(/private.*TD_HTTP_ALLOW/s),
    });
    expect(other.hits).toEqual([]);
  });

  it('refuses a private address when nothing is allowed', async () => {
    await expect(fetchPage({ url: 'http://[::ffff:127.0.0.1]:1/' }, makeContext('/nonexistent'))).rejects.toMatchObject(
      { code: 'handler_error', message: expect.stringMatching(/private/) },
    );
  });

  it('returns a plain-text page as it is', async () => {
    await expect(fetchPage({ url: `${server.origin}/plain` }, ctx())).resolves.toMatchObject({ text: '  just text  ' });
  });

  it('decodes the charset the content type names', async () => {
    await expect(fetchPage({ url: `${server.origin}/latin1` }, ctx())).resolves.toMatchObject({ text: 'café' });
  });

  it('describes a binary page instead of returning its bytes', async () => {
    await expect(fetchPage({ url: `${server.origin}/image` }, ctx())).resolves.toMatchObject({
      text: '[3 bytes of image/png, not text]',
    });
  });

  it('reports a 404 as a normal output', async () => {
    await expect(fetchPage({ url: `${server.origin}/missing` }, ctx())).resolves.toMatchObject({
      status: 404,
      text: 'no such page',
    });
  });
});
