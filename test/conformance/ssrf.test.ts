import { expect, it } from 'vitest';
import { rt, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';

/** Every spelling of a loopback (or unspecified) address we know, on `port`. */
function loopbackSpellings(port: number, path: string): string[] {
  const hosts = [
    '127.0.0.1',
    'localhost',
    'LOCALHOST',
    'localhost.',
    '127.1',
    '127.0.1',
    '127.0.0.1.',
    '127.000.000.001',
    '0x7f000001',
    '0x7f.0.0.1',
    '0177.0.0.1',
    '2130706433',
    '017700000001',
    '127.255.255.254',
    '[::1]',
    '[0:0:0:0:0:0:0:1]',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[0:0:0:0:0:ffff:127.0.0.1]',
    '[::127.0.0.1]',
    '0.0.0.0',
    '0',
    '[::]',
    'user:pw@127.0.0.1',
  ];
  return hosts.map((h) => `http://${h}:${port}${path}`);
}

// API.md TD_HTTP_ALLOW: private, loopback, link-local and unspecified addresses are refused in
// any spelling, on every redirect too, unless the URL's host is listed. The canary is a loopback
// server that is NOT listed: it must never see a request.
describeModes('SSRF guard of http_request and fetch_page', (mode) => {
  const f = useService(mode);
  const session = () => f.api.session(['http_request', 'fetch_page'], { provider: 'openai', autoApprove: 'all' });

  it('reaches the allowed host:port (the positive control)', async () => {
    const s = await session();
    const tag = tagOf('allowed');
    const b = await f.api.round(s, uid('run'), [
      rt('http_request', { url: f.target.url('echo', tag, 0) }),
      rt('fetch_page', { url: f.target.url('page', tag, 1) }),
    ]);
    expect(b.results.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(f.target.tag(tag).hits).toBe(2);
  });

  it('never reaches a loopback server outside TD_HTTP_ALLOW, whatever the spelling of its address', async () => {
    const s = await session();
    const urls = loopbackSpellings(f.canary.port, `/echo/${tagOf('direct')}/0`);
    const calls = [
      ...urls.map((url) => rt('http_request', { url })),
      ...urls.map((url) => rt('fetch_page', { url })),
      ...urls.slice(0, 4).map((url) => rt('http_request', { url, method: 'POST', body: 'x' })),
    ];
    const b = await f.api.round(s, uid('run'), calls);
    b.results.forEach((r, i) => {
      expect(r.status, `${JSON.stringify(calls[i]?.args)} → ${JSON.stringify(r)}`).toBe('error');
      expect(r.error?.code).toBe('handler_error');
    });
    expect(f.canary.requests.map((q) => q.path)).toEqual([]);
  });

  it('never follows a redirect from the allowed server to a loopback server outside TD_HTTP_ALLOW', async () => {
    const s = await session();
    const tag = tagOf('redirect');
    const targets = [
      ...loopbackSpellings(f.canary.port, `/echo/${tag}/0`).slice(0, 16),
      `http://127.0.0.1:${f.canary.port}/echo/${tag}/1`,
    ];
    const calls = targets.flatMap((to, i) => [
      rt('http_request', { url: f.target.url('redirect', tag, i, { to }) }),
      rt('fetch_page', { url: f.target.url('redirect', tag, 100 + i, { to }) }),
    ]);
    // Two hops: allowed → allowed → canary.
    const secondHop = f.target.url('redirect', tag, 999, { to: `http://localhost:${f.canary.port}/echo/${tag}/2` });
    calls.push(rt('http_request', { url: f.target.url('redirect', tag, 998, { to: secondHop }) }));
    calls.push(
      rt('http_request', {
        url: f.target.url('redirect', tag, 997, { to: `http://127.0.0.1:${f.canary.port}/echo/${tag}/3` }),
        method: 'POST',
        body: 'x',
      }),
    );
    const b = await f.api.round(s, uid('run'), calls);
    b.results.forEach((r, i) => {
      expect(r.status, `${JSON.stringify(calls[i]?.args)} → ${JSON.stringify(r)}`).toBe('error');
      expect(r.error?.code).toBe('handler_error');
    });
    expect(f.target.tag(tag).hits).toBe(calls.length + 1); // each first hop, plus the second hop
    expect(f.canary.requests.map((q) => q.path)).toEqual([]);
  });

  it('matches TD_HTTP_ALLOW against the host as written: another spelling of the allowed host is refused', async () => {
    const s = await session();
    const tag = tagOf('spelling');
    const calls = [`localhost`, `[::1]`, `0.0.0.0`, `[::ffff:127.0.0.1]`].map((h, i) =>
      rt('http_request', { url: `http://${h}:${f.target.port}/echo/${tag}/${i}` }),
    );
    const b = await f.api.round(s, uid('run'), calls);
    for (const r of b.results) expect(r).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
    expect(f.target.tag(tag).hits).toBe(0);
  });

  it('refuses schemes other than http and https with error/handler_error', async () => {
    const s = await session();
    const urls = [
      'file:///etc/passwd',
      'ftp://127.0.0.1/',
      'data:text/plain,hi',
      'gopher://127.0.0.1:70/',
      'not a url',
    ];
    const b = await f.api.round(s, uid('run'), [
      ...urls.map((url) => rt('http_request', { url })),
      ...urls.map((url) => rt('fetch_page', { url })),
    ]);
    for (const r of b.results) expect(r).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
  });

  it('refuses private, link-local and metadata addresses without connecting', async () => {
    const s = await session();
    const urls = [
      'http://10.0.0.1/',
      'http://192.168.0.1/',
      'http://172.16.0.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://100.64.0.1/',
    ];
    const started = Date.now();
    const b = await f.api.round(
      s,
      uid('run'),
      urls.map((url) => rt('http_request', { url })),
    );
    for (const r of b.results) {
      expect(r).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
      expect(r.error?.message).toMatch(/private|loopback|link-local|not public|refused/i);
    }
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
