import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { Socket } from 'node:net';

/** One request the server saw. */
export interface SeenRequest {
  method: string;
  path: string;
  search: string;
  headers: IncomingHttpHeaders;
  body: string;
  tag: string;
  /** The client's port: which process made the request can be found from it. */
  remotePort: number | undefined;
  start: number;
  end: number | undefined;
}

/** Per-tag counters: hits, the most requests in flight at once, and the requests themselves. */
export interface TagStats {
  hits: number;
  inFlight: number;
  maxInFlight: number;
  requests: SeenRequest[];
}

/**
 * A loopback HTTP server the tools call. Paths are `/<kind>/<tag>/<n>`, the tag per test so
 * counters never mix:
 *   /slow/<tag>/<n>?ms=300        waits, then 200 {id, at}
 *   /status/<tag>/<n>?code=404    answers that status with {id, status}
 *   /reset/<tag>/<n>              destroys the connection without an answer
 *   /redirect/<tag>/<n>?to=<url>  302 to any url
 *   /page/<tag>/<n>               a small HTML page with a marker
 *   /echo/<tag>/<n>               200 {id, method, headers, body}
 *   /searx?q=…&format=json        a fake SearxNG JSON API
 */
export interface TargetServer {
  port: number;
  /** Every request, in arrival order. */
  requests: SeenRequest[];
  url(kind: string, tag: string, n?: number, query?: Record<string, string>): string;
  hits(path: string): number;
  tag(tag: string): TagStats;
  close(): Promise<void>;
}

/** The most `big` streams. */
const MAX_BIG_BYTES = 128 * 1024 * 1024;
const MAX_WAIT_MS = 30_000;

/**
 * Starts the server on a free port, dual-stack (`::`) where the host has IPv6 so that every
 * spelling of a loopback address reaches it, else on 127.0.0.1.
 */
export async function startTargetServer(): Promise<TargetServer> {
  const requests: SeenRequest[] = [];
  const tags = new Map<string, TagStats>();
  const hits = new Map<string, number>();
  const sockets = new Set<Socket>();
  const tagStats = (tag: string) => {
    let t = tags.get(tag);
    if (!t) {
      t = { hits: 0, inFlight: 0, maxInFlight: 0, requests: [] };
      tags.set(tag, t);
    }
    return t;
  };

  const server = createServer(function answerToolRequest(req, res) {
    const u = new URL(req.url ?? '/', 'http://target');
    const parts = u.pathname.split('/').filter(Boolean);
    const kind = parts[0] ?? '';
    const tag = parts[1] ?? '';
    const id = parts.slice(1).join('/');
    const seen: SeenRequest = {
      method: req.method ?? '',
      path: u.pathname,
      search: u.search,
      headers: { ...req.headers },
      body: '',
      tag,
      remotePort: req.socket.remotePort,
      start: Date.now(),
      end: undefined,
    };
    const stats = tagStats(tag);
    requests.push(seen);
    stats.requests.push(seen);
    stats.hits++;
    hits.set(u.pathname, (hits.get(u.pathname) ?? 0) + 1);
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    let done = false;
    res.on('close', () => {
      if (done) return;
      done = true;
      seen.end ??= Date.now();
      stats.inFlight--;
    });
    const send = (code: number, body: unknown, headers: Record<string, string> = {}) => {
      seen.end = Date.now();
      res.writeHead(code, { 'content-type': 'application/json', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.body = Buffer.concat(chunks).toString('utf8');
      switch (kind) {
        case 'slow': {
          const ms = Math.max(0, Math.min(MAX_WAIT_MS, Number(u.searchParams.get('ms')) || 0));
          const timer = setTimeout(() => send(200, { id, at: Date.now() }), ms);
          res.on('close', () => clearTimeout(timer));
          return;
        }
        case 'status': {
          const code = Math.max(200, Math.min(599, Number(u.searchParams.get('code')) || 404));
          return send(code, { id, status: code });
        }
        case 'reset':
          req.socket.destroy();
          return;
        case 'redirect': {
          const to = u.searchParams.get('to') ?? '';
          return send(302, { id, location: to }, { location: to });
        }
        case 'page':
          return send(
            200,
            `<!doctype html><html><head><title>page ${id}</title><style>.x{color:red}</style></head><body><h1>Marker ${id}</h1><p>hello <b>from</b> the target</p><script>var hidden = 1;</script></body></html>`,
            { 'content-type': 'text/html; charset=utf-8' },
          );
        case 'big': {
          // `bytes` of "x", streamed in 1 MiB chunks (for download caps), with a text content type.
          let left = Math.max(0, Math.min(MAX_BIG_BYTES, Number(u.searchParams.get('bytes')) || 0));
          seen.end = Date.now();
          res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
          const chunk = Buffer.alloc(1024 * 1024, 'x');
          const pump = () => {
            while (left > 0) {
              const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
              left -= part.length;
              if (!res.write(part)) return void res.once('drain', pump);
            }
            res.end();
          };
          res.on('error', () => undefined);
          return pump();
        }
        case 'echo':
          return send(200, { id, method: req.method, headers: req.headers, body: seen.body });
        case 'searx':
          return send(200, searxAnswer(u.searchParams.get('q') ?? '', u.searchParams.get('format') ?? ''));
        default:
          return send(404, { error: 'not found', path: u.pathname });
      }
    });
  });
  server.keepAliveTimeout = 1000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const port = await listen(server);
  return {
    port,
    requests,
    url(kind, tag, n = 0, query) {
      const qs = query ? `?${new URLSearchParams(query)}` : '';
      return `http://127.0.0.1:${port}/${kind}/${tag}/${n}${qs}`;
    },
    hits: (p) => hits.get(p) ?? 0,
    tag: tagStats,
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function searxAnswer(q: string, format: string) {
  return {
    query: q,
    format,
    number_of_results: 2,
    results: [
      {
        title: `First result for ${q}`,
        url: `https://example.invalid/1/${encodeURIComponent(q)}`,
        content: `snippet one about ${q}`,
        engine: 'fake',
      },
      {
        title: `Second result for ${q}`,
        url: `https://example.invalid/2/${encodeURIComponent(q)}`,
        content: `snippet two about ${q}`,
        engine: 'fake',
      },
      { title: 'no url, skipped', content: 'a result without a url' },
    ],
  };
}

function listen(server: Server): Promise<number> {
  const on = (host: string) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => {
        server.off('error', reject);
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : 0);
      });
    });
  return on('::').catch(() => on('127.0.0.1'));
}
