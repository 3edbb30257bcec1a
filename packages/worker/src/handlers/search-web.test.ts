import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../testing/http-test-server.js';
import { makeContext } from '../../testing/workspace.js';
import { MAX_SEARCH_RESULTS, searchWeb } from './search-web.js';

let searx: TestServer;
const queries: URLSearchParams[] = [];

beforeAll(async () => {
  searx = await startTestServer({
    '/search': (req, res) => {
      const params = new URL(req.url ?? '/', 'http://x').searchParams;
      queries.push(params);
      const q = params.get('q') ?? '';
      if (q === 'broken') return void res.writeHead(200, { 'content-type': 'application/json' }).end('<html>');
      if (q === 'fail') return void res.writeHead(502).end('bad gateway');
      const results =
        q === 'many'
          ? Array.from({ length: 40 }, (_, i) => ({ title: `r${i}`, url: `https://e.com/${i}`, content: '' }))
          : [
              { title: 'Node.js', url: 'https://nodejs.org/', content: 'JavaScript runtime', engine: 'x' },
              { url: 'https://no-title.example/' },
              { title: 'no url' },
            ];
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ query: q, results }));
    },
  });
});
afterAll(() => searx.close());

// The operator's endpoint is on loopback and TD_HTTP_ALLOW is empty: search_web must still reach it.
const ctx = () => makeContext('/nonexistent', { config: { searchUrl: `${searx.origin}/search?lang=en` } });

describe('search_web', () => {
  it('maps SearxNG results to title, url and snippet, skipping results without a url', async () => {
    await expect(searchWeb({ query: 'node & js' }, ctx())).resolves.toEqual({
      results: [
        { title: 'Node.js', url: 'https://nodejs.org/', snippet: 'JavaScript runtime' },
        { title: 'https://no-title.example/', url: 'https://no-title.example/', snippet: '' },
      ],
    });
    const sent = queries.at(-1);
    expect(sent?.get('q')).toBe('node & js');
    expect(sent?.get('format')).toBe('json');
    expect(sent?.get('lang')).toBe('en');
  });

  it(`returns at most ${MAX_SEARCH_RESULTS} results`, async () => {
    const out = await searchWeb({ query: 'many' }, ctx());
    expect(out.results).toHaveLength(MAX_SEARCH_RESULTS);
  });

  it('says search_web is not configured when TD_SEARCH_URL is unset', async () => {
    await expect(searchWeb({ query: 'x' }, makeContext('/nonexistent'))).rejects.toMatchObject({
      code: 'handler_error',
      message: 'search_web is not configured: set TD_SEARCH_URL',
    });
  });

  it('fails with the status when the search service answers an error', async () => {
    await expect(searchWeb({ query: 'fail' }, ctx())).rejects.toMatchObject({
      code: 'handler_error',
      message: 'the search service answered HTTP 502',
    });
  });

  it('fails clearly when the search service does not answer JSON', async () => {
    await expect(searchWeb({ query: 'broken' }, ctx())).rejects.toMatchObject({
      message: expect.stringMatching(/did not answer JSON/),
    });
  });
});
