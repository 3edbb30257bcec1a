import type { LookupAddress } from 'node:dns';
import { statSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo, connect, createServer, type Server as NetServer } from 'node:net';
import { dirname } from 'node:path';
import { ConfigError } from '@tool-dispatch/shared';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type SandboxProxy, type SandboxProxyOptions, startSandboxProxy } from './sandbox-proxy.js';

/** The test's own resolver: names of its own, all on loopback, each lookup counted. */
const NAMES: Record<string, string> = {
  'registry.test': '127.0.0.1',
  'a.example.test': '127.0.0.1',
  'b.c.example.test': '127.0.0.1',
  'example.test': '127.0.0.1',
  'evilexample.test': '127.0.0.1',
  'internal.test': '127.0.0.1',
};
const lookups: string[] = [];
async function resolveHost(host: string): Promise<LookupAddress[]> {
  lookups.push(host);
  const address = NAMES[host];
  if (!address) throw Object.assign(new Error(`no such name ${host}`), { code: 'ENOTFOUND' });
  return [{ address, family: 4 }];
}

let echo: NetServer;
let echoPort: number;
let web: Server;
let webPort: number;
const seen: { url: string | undefined; headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  echo = createServer((s) => {
    s.on('error', () => {});
    s.pipe(s);
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as AddressInfo).port;
  web = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      seen.push({ url: req.url, headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream': 'yes' });
      res.end(`hello from ${req.url} (${body.length} bytes)`);
    });
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  webPort = (web.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((r) => echo.close(r));
  await new Promise((r) => web.close(r));
});

const proxies: SandboxProxy[] = [];
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((p) => p.close()));
  seen.length = 0;
  lookups.length = 0;
});

async function proxyWith(o: Partial<SandboxProxyOptions>): Promise<SandboxProxy> {
  const proxy = await startSandboxProxy({ allow: [], httpAllow: [], resolveHost, ...o });
  proxies.push(proxy);
  return proxy;
}

/** Writes raw bytes to the proxy and reads until it closes (or `until` matches). */
function exchange(proxy: SandboxProxy, data: string | Buffer, until?: RegExp, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxy.socketPath);
    let got = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no end from the proxy; got ${JSON.stringify(got)}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(got);
    };
    socket.on('data', (c: Buffer) => {
      got += c.toString('latin1');
      if (until?.test(got)) done();
    });
    socket.on('close', done);
    socket.on('error', done);
    socket.write(data);
  });
}

const connectTo = (authority: string, extra = '') =>
  `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${extra}\r\n`;
const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);

describe('CONNECT', () => {
  it('tunnels to a listed name (its loopback address allowed by httpAllow) and pins the checked address', async () => {
    const proxy = await proxyWith({ allow: [`registry.test:${echoPort}`], httpAllow: ['registry.test'] });
    const answer = await exchange(
      proxy,
      `${connectTo(`registry.test:${echoPort}`)}ping-through-tunnel`,
      /ping-through-tunnel$/,
    );
    expect(answer).toBe('HTTP/1.1 200 Connection Established\r\n\r\nping-through-tunnel');
    // one lookup, by the guard: the connection did not ask DNS again (the system has no such name)
    expect(lookups).toEqual(['registry.test']);
  });

  it('answers 403 naming the list for a name it does not list, and tells onRefusal', async () => {
    const refusals: { status: number; message: string }[] = [];
    const proxy = await proxyWith({
      allow: [`registry.test:${echoPort}`],
      httpAllow: ['evil.test'],
      onRefusal: (r) => refusals.push(r),
    });
    const answer = await exchange(proxy, connectTo(`evil.test:${echoPort}`));
    expect(statusOf(answer)).toBe(403);
    expect(answer).toContain(`evil.test:${echoPort} is not in TD_SANDBOX_NET; allowed: registry.test:${echoPort}`);
    expect(lookups).toEqual([]);
    expect(refusals).toEqual([{ status: 403, message: expect.stringContaining(`evil.test:${echoPort} is not in`) }]);
  });

  it('refuses a listed name resolving to a loopback address unless httpAllow names it', async () => {
    const proxy = await proxyWith({ allow: [`internal.test:${echoPort}`] });
    const answer = await exchange(proxy, connectTo(`internal.test:${echoPort}`));
    expect(statusOf(answer)).toBe(403);
    expect(answer).toMatch(/refused to connect to internal\.test:\d+ \(it resolves to 127\.0\.0\.1\).*TD_HTTP_ALLOW/);
  });

  it('lets *. match subdomains at any depth but neither the apex nor a look-alike', async () => {
    const proxy = await proxyWith({
      allow: [`*.example.test:${echoPort}`],
      httpAllow: ['a.example.test', 'b.c.example.test', 'example.test', 'evilexample.test'],
    });
    for (const host of ['a.example.test', 'b.c.example.test']) {
      expect(statusOf(await exchange(proxy, connectTo(`${host}:${echoPort}`), /\r\n\r\n/))).toBe(200);
    }
    for (const host of ['example.test', 'evilexample.test']) {
      expect(statusOf(await exchange(proxy, connectTo(`${host}:${echoPort}`)))).toBe(403);
    }
  });

  it('allows a pattern without a port on 80 and 443 only', async () => {
    const proxy = await proxyWith({ allow: ['registry.test'], httpAllow: ['registry.test'] });
    const other = await exchange(proxy, connectTo(`registry.test:${echoPort}`));
    expect(statusOf(other)).toBe(403);
    expect(other).toContain('a pattern without :port allows ports 80 and 443');
    // 443 passes the list and the guard; nothing listens there, so the connection fails: 502, not 403
    const https = await exchange(proxy, connectTo('registry.test:443'));
    expect(statusOf(https)).toBe(502);
    expect(https).toContain('cannot connect to registry.test:443');
  });

  it('reaches an IP address only when it is listed as one, whatever its spelling', async () => {
    const byName = await proxyWith({ allow: [`registry.test:${echoPort}`], httpAllow: ['127.0.0.1'] });
    for (const ip of ['127.0.0.1', '2130706433', '0x7f.1', '127.1']) {
      const answer = await exchange(byName, connectTo(`${ip}:${echoPort}`));
      expect(statusOf(answer)).toBe(403);
      expect(answer).toContain(
        `127.0.0.1:${echoPort} is not in TD_SANDBOX_NET (an IP address is reached only when listed as one)`,
      );
    }
    const byIp = await proxyWith({ allow: [`127.0.0.1:${echoPort}`], httpAllow: ['127.0.0.1'] });
    expect(statusOf(await exchange(byIp, connectTo(`2130706433:${echoPort}`), /\r\n\r\n/))).toBe(200);
    const unguarded = await proxyWith({ allow: [`127.0.0.1:${echoPort}`] });
    expect(await exchange(unguarded, connectTo(`127.0.0.1:${echoPort}`))).toMatch(
      /^HTTP\/1\.1 403[\s\S]*refused to connect to 127\.0\.0\.1/,
    );
  });

  it('reaches a listed IPv6 address in any of its spellings', async () => {
    const echo6 = createServer((s) => {
      s.on('error', () => {});
      s.pipe(s);
    });
    await new Promise<void>((r) => echo6.listen(0, '::1', r));
    const port6 = (echo6.address() as AddressInfo).port;
    try {
      const proxy = await proxyWith({ allow: [`[::1]:${port6}`], httpAllow: ['[::1]'] });
      for (const spelling of ['[::1]', '[0:0:0:0:0:0:0:1]']) {
        expect(await exchange(proxy, `${connectTo(`${spelling}:${port6}`)}v6`, /v6$/)).toMatch(/^HTTP\/1\.1 200/);
      }
      expect(statusOf(await exchange(proxy, connectTo(`[::2]:${port6}`)))).toBe(403);
    } finally {
      await new Promise((r) => echo6.close(r));
    }
  });

  it('matches names in any case and with a trailing dot', async () => {
    const proxy = await proxyWith({ allow: [`registry.test:${echoPort}`], httpAllow: ['registry.test'] });
    expect(statusOf(await exchange(proxy, connectTo(`REGISTRY.Test.:${echoPort}`), /\r\n\r\n/))).toBe(200);
  });

  it.each([
    ['a NUL in the host', `CONNECT regis\u0000try.test:443 HTTP/1.1\r\n\r\n`],
    ['a percent sign in the host', 'CONNECT registry%2etest:443 HTTP/1.1\r\n\r\n'],
    ['a user name', 'CONNECT user@registry.test:443 HTTP/1.1\r\n\r\n'],
    ['no port', 'CONNECT registry.test HTTP/1.1\r\n\r\n'],
    ['port 0', 'CONNECT registry.test:0 HTTP/1.1\r\n\r\n'],
    ['a bare IPv6 address', 'CONNECT ::1:443 HTTP/1.1\r\n\r\n'],
    ['a non-ASCII name', 'CONNECT bücher.test:443 HTTP/1.1\r\n\r\n'],
    ['a path', 'CONNECT registry.test:443/x HTTP/1.1\r\n\r\n'],
  ])('answers 400 to a CONNECT with %s', async (_what, request) => {
    const proxy = await proxyWith({ allow: ['registry.test', '*.test'], httpAllow: ['registry.test'] });
    const answer = await exchange(proxy, Buffer.from(request, 'utf8'));
    expect(statusOf(answer)).toBe(400);
    expect(answer).toContain('tool-dispatch sandbox proxy:');
    expect(lookups).toEqual([]);
  });
});

describe('plain HTTP', () => {
  const get = (url: string, host: string, extra = '') => `GET ${url} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;

  it('forwards an absolute-form request to a listed name, without hop-by-hop headers, then closes', async () => {
    const proxy = await proxyWith({ allow: [`registry.test:${webPort}`], httpAllow: ['registry.test'] });
    const answer = await exchange(
      proxy,
      get(
        `http://registry.test:${webPort}/pkg?x=1`,
        `registry.test:${webPort}`,
        'Proxy-Connection: keep-alive\r\nX-Keep: 1\r\nConnection: keep-alive, X-Drop\r\nX-Drop: secret\r\n',
      ),
    );
    expect(statusOf(answer)).toBe(200);
    expect(answer).toMatch(/\r\nx-upstream: yes\r\n/i);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answer).toContain('hello from /pkg?x=1');
    expect(seen).toHaveLength(1);
    expect(seen[0]?.headers.host).toBe(`registry.test:${webPort}`);
    expect(seen[0]?.headers['x-keep']).toBe('1');
    expect(seen[0]?.headers['proxy-connection']).toBeUndefined();
    expect(seen[0]?.headers['x-drop']).toBeUndefined();
  });

  it('forwards a chunked body re-framed, and a Content-Length one as it is', async () => {
    const proxy = await proxyWith({ allow: [`registry.test:${webPort}`], httpAllow: ['registry.test'] });
    const head = `POST http://registry.test:${webPort}/up HTTP/1.1\r\nHost: registry.test:${webPort}\r\n`;
    const chunked = await exchange(
      proxy,
      `${head}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n`,
    );
    expect(chunked).toContain('hello from /up (11 bytes)');
    const sized = await exchange(proxy, `${head}Content-Length: 3\r\n\r\nabc`);
    expect(sized).toContain('hello from /up (3 bytes)');
    expect(seen.map((s) => s.body)).toEqual(['hello world', 'abc']);
  });

  it('refuses a Host header that differs from the URL, reaching nothing', async () => {
    const proxy = await proxyWith({
      allow: [`registry.test:${webPort}`, `a.example.test:${webPort}`],
      httpAllow: ['registry.test'],
    });
    const answer = await exchange(proxy, get(`http://registry.test:${webPort}/`, `a.example.test:${webPort}`));
    expect(statusOf(answer)).toBe(403);
    expect(answer).toContain(
      `the Host header (a.example.test:${webPort}) differs from the URL's host (registry.test:${webPort})`,
    );
    const port = await exchange(proxy, get(`http://registry.test:${webPort}/`, 'registry.test'));
    expect(statusOf(port)).toBe(403);
    expect(seen).toEqual([]);
    expect(lookups).toEqual([]);
  });

  it('answers 403 for a name it does not list', async () => {
    const proxy = await proxyWith({ allow: [`registry.test:${webPort}`], httpAllow: ['registry.test'] });
    const answer = await exchange(proxy, get(`http://evil.test:${webPort}/?token=secret`, `evil.test:${webPort}`));
    expect(statusOf(answer)).toBe(403);
    expect(answer).toMatch(/\r\nx-td-sandbox-proxy: refused\r\n/);
    expect(answer).toContain(`evil.test:${webPort} is not in TD_SANDBOX_NET`);
    expect(seen).toEqual([]);
  });

  it('serves one request per connection: a pipelined second request is never forwarded', async () => {
    const proxy = await proxyWith({ allow: [`registry.test:${webPort}`], httpAllow: ['registry.test'] });
    const host = `registry.test:${webPort}`;
    const answer = await exchange(proxy, get(`http://${host}/one`, host) + get(`http://${host}/two`, host));
    expect(answer).toContain('hello from /one');
    expect(answer).not.toContain('hello from /two');
    // Node stops reading after a `Connection: close` exchange; should it not, the proxy answers 400
    expect(answer.match(/HTTP\/1\.1 \d{3}/g)?.length ?? 0).toBeLessThanOrEqual(2);
    expect(answer).not.toMatch(/HTTP\/1\.1 200[\s\S]*HTTP\/1\.1 200/);
    expect(seen.map((s) => s.url)).toEqual(['/one']);
  });

  it.each([
    ['a garbage request line', 'HELLO\r\n\r\n'],
    ['an origin-form request', 'GET / HTTP/1.1\r\nHost: registry.test\r\n\r\n'],
    ['an https URL', 'GET https://registry.test/ HTTP/1.1\r\nHost: registry.test\r\n\r\n'],
    ['a user name in the URL', 'GET http://u:p@registry.test/ HTTP/1.1\r\nHost: registry.test\r\n\r\n'],
    ['two Host headers', 'GET http://registry.test/ HTTP/1.1\r\nHost: registry.test\r\nHost: evil.test\r\n\r\n'],
    ['no Host header', 'GET http://registry.test/ HTTP/1.0\r\n\r\n'],
    [
      'Content-Length with Transfer-Encoding',
      'POST http://registry.test/ HTTP/1.1\r\nHost: registry.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
    [
      'two different Content-Lengths',
      'POST http://registry.test/ HTTP/1.1\r\nHost: registry.test\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd',
    ],
    ['a NUL in a header', 'GET http://registry.test/ HTTP/1.1\r\nHost: registry.test\r\nX-A: a\u0000b\r\n\r\n'],
    ['a NUL in the URL host', 'GET http://regis\u0000try.test/ HTTP/1.1\r\nHost: registry.test\r\n\r\n'],
    [
      'a 17 KiB head',
      `GET http://registry.test/ HTTP/1.1\r\nHost: registry.test\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`,
    ],
    [
      'an upgrade',
      'GET http://registry.test/ HTTP/1.1\r\nHost: registry.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
    ],
  ])('answers 400 to %s, forwarding nothing', async (_what, request) => {
    const proxy = await proxyWith({
      allow: ['registry.test', `registry.test:${webPort}`],
      httpAllow: ['registry.test'],
    });
    const answer = await exchange(proxy, request);
    expect(statusOf(answer)).toBe(400);
    expect(answer).toContain('tool-dispatch sandbox proxy:');
    expect(seen).toEqual([]);
  });
});

describe('limits and lifetime', () => {
  it('closes a tunnel idle for longer than idleTimeoutMs', async () => {
    const proxy = await proxyWith({
      allow: [`registry.test:${echoPort}`],
      httpAllow: ['registry.test'],
      limits: { idleTimeoutMs: 300 },
    });
    const started = Date.now();
    const answer = await exchange(proxy, connectTo(`registry.test:${echoPort}`));
    expect(statusOf(answer)).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('closes a client that never finishes its request head', async () => {
    const proxy = await proxyWith({ allow: ['registry.test'], limits: { headersTimeoutMs: 300 } });
    const started = Date.now();
    await exchange(proxy, 'CONNECT registry.test:443 HTTP/1.1\r\nX-Slow: ', undefined, 5000);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('closes connections over maxConnections at once, and serves again after', async () => {
    const proxy = await proxyWith({
      allow: [`registry.test:${echoPort}`],
      httpAllow: ['registry.test'],
      limits: { maxConnections: 2 },
    });
    const open = [connect(proxy.socketPath), connect(proxy.socketPath)];
    await Promise.all(open.map((s) => new Promise((r) => s.once('connect', r))));
    await new Promise((r) => setTimeout(r, 50));
    const third = await exchange(proxy, connectTo(`registry.test:${echoPort}`), /\r\n\r\n/, 2000);
    expect(third).toBe('');
    for (const s of open) s.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(statusOf(await exchange(proxy, connectTo(`registry.test:${echoPort}`), /\r\n\r\n/))).toBe(200);
  });

  it('survives clients that vanish mid-request and mid-tunnel', async () => {
    const proxy = await proxyWith({
      allow: [`registry.test:${echoPort}`, `registry.test:${webPort}`],
      httpAllow: ['registry.test'],
    });
    for (let i = 0; i < 20; i++) {
      const s = connect(proxy.socketPath);
      s.on('error', () => {});
      s.write(
        i % 2
          ? connectTo(`registry.test:${echoPort}`)
          : `POST http://registry.test:${webPort}/ HTTP/1.1\r\nHost: registry.test:${webPort}\r\nContent-Length: 100\r\n\r\nab`,
      );
      setTimeout(() => s.destroy(), i * 3);
    }
    await new Promise((r) => setTimeout(r, 200));
    expect(statusOf(await exchange(proxy, connectTo(`registry.test:${echoPort}`), /\r\n\r\n/))).toBe(200);
  });

  it('listens in a directory only its owner can enter, and close() ends tunnels and removes it', async () => {
    const proxy = await proxyWith({ allow: [`registry.test:${echoPort}`], httpAllow: ['registry.test'] });
    expect(statusSyncMode(dirname(proxy.socketPath))).toBe(0o700);
    const tunnel = exchange(proxy, connectTo(`registry.test:${echoPort}`), undefined, 5000);
    await new Promise((r) => setTimeout(r, 100));
    await proxy.close();
    expect(statusOf(await tunnel)).toBe(200);
    await expect(access(dirname(proxy.socketPath))).rejects.toThrow(/ENOENT/);
  });

  it('refuses to start on a bad pattern, naming it', async () => {
    await expect(startSandboxProxy({ allow: ['ok.test', 'bad pattern'], httpAllow: [] })).rejects.toThrow(ConfigError);
    await expect(
      startSandboxProxy({ allow: ['x.test:99999'], httpAllow: [], policyName: 'net of server "git"' }),
    ).rejects.toThrow(/^net of server "git": "x.test:99999" is not a host\[:port\] pattern/);
  });
});

function statusSyncMode(path: string): number {
  return statSync(path).mode & 0o777;
}
