import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type NetPattern, parseNetPattern } from '@tool-dispatch/shared';
import { errorMessage } from '../support/node-error.js';
import type { ResolveHost } from './net-guard.js';
import { forwardHttpRequest } from './sandbox-proxy-http.js';
import { checkTarget, connectTarget, ProxyRefusal, parseAuthority, type TargetPolicy } from './sandbox-proxy-target.js';

export { proxiedLaunch, SANDBOX_PROXY_PORT } from './sandbox-bridge.js';

/** Limits of one proxy; docs/sandbox-network.md lists them. */
export interface SandboxProxyLimits {
  /** Client connections at once; more are closed on arrival. */
  maxConnections: number;
  /** A tunnel or a forwarded exchange with no byte either way for this long is closed. */
  idleTimeoutMs: number;
  /** Until the request head (CONNECT or a plain request) is in. */
  headersTimeoutMs: number;
  /** Resolving and connecting to the target. */
  connectTimeoutMs: number;
  /** Request line plus headers. */
  maxHeaderBytes: number;
}

export const SANDBOX_PROXY_LIMITS: SandboxProxyLimits = {
  maxConnections: 256,
  idleTimeoutMs: 120_000,
  headersTimeoutMs: 10_000,
  connectTimeoutMs: 10_000,
  maxHeaderBytes: 16 * 1024,
};

export interface SandboxProxyOptions {
  /** `host[:port]` patterns (TD_SANDBOX_NET's list); a bad one makes startSandboxProxy throw a ConfigError. */
  allow: readonly string[];
  /** TD_HTTP_ALLOW: names or addresses that may be private or loopback. */
  httpAllow: readonly string[];
  /** Named in the 403 bodies (default `TD_SANDBOX_NET`; an MCP server's `net`, say). */
  policyName?: string;
  /** Injected in tests (names of the test's own); defaults to the system resolver. */
  resolveHost?: ResolveHost;
  limits?: Partial<SandboxProxyLimits>;
  /** Told of every request the proxy answers itself (a 4xx or 5xx), for the worker's log. */
  onRefusal?: (refusal: { status: number; message: string }) => void;
}

export interface SandboxProxy {
  /** A unix socket in a directory of its own (mode 0700, the worker's uid). */
  readonly socketPath: string;
  /** Stops listening, ends every tunnel and exchange, removes the socket's directory. */
  close(): Promise<void>;
}

interface ProxyContext {
  policy: TargetPolicy;
  limits: SandboxProxyLimits;
  signal: AbortSignal;
  sockets: Set<Socket>;
  onRefusal: ((refusal: { status: number; message: string }) => void) | undefined;
}

/**
 * Starts a filtering HTTP(S) proxy on a unix socket: CONNECT tunnels (TLS passes undecrypted)
 * and absolute-form plain HTTP, each to a target the allow list names and whose addresses pass
 * the worker's SSRF guard; everything else gets a 4xx with the reason. docs/sandbox-network.md.
 */
export async function startSandboxProxy(o: SandboxProxyOptions): Promise<SandboxProxy> {
  const name = o.policyName ?? 'TD_SANDBOX_NET';
  const patterns: NetPattern[] = o.allow.map((p) => parseNetPattern(p, name));
  const limits = { ...SANDBOX_PROXY_LIMITS, ...o.limits };
  const closing = new AbortController();
  const ctx: ProxyContext = {
    policy: { patterns, httpAllow: o.httpAllow, policyName: name, resolveHost: o.resolveHost },
    limits,
    signal: closing.signal,
    sockets: new Set(),
    onRefusal: o.onRefusal,
  };
  const dir = await mkdtemp(join(tmpdir(), 'td-sandbox-net-')); // mode 0700
  const socketPath = join(dir, 'proxy.sock');
  const server = createProxyServer(ctx);
  try {
    await listen(server, socketPath);
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  let closed: Promise<void> | undefined;
  return {
    socketPath,
    close() {
      closed ??= closeProxy(server, ctx, closing, dir);
      return closed;
    },
  };
}

function listen(server: Server, socketPath: string): Promise<void> {
  return new Promise<void>(function listenOnSocket(resolve, reject) {
    server.once('error', reject);
    server.listen(socketPath, function listening() {
      server.off('error', reject);
      resolve();
    });
  });
}

async function closeProxy(server: Server, ctx: ProxyContext, closing: AbortController, dir: string): Promise<void> {
  closing.abort(new Error('the sandbox proxy is closing'));
  const done = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const socket of ctx.sockets) socket.destroy();
  await done;
  await rm(dir, { recursive: true, force: true });
}

function createProxyServer(ctx: ProxyContext): Server {
  const server = createServer({
    maxHeaderSize: ctx.limits.maxHeaderBytes,
    headersTimeout: ctx.limits.headersTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, ctx.limits.headersTimeoutMs),
    requestTimeout: 0, // a long upload is bounded by the idle timeout instead
    keepAliveTimeout: 1,
    joinDuplicateHeaders: false,
  });
  server.maxConnections = ctx.limits.maxConnections;
  server.timeout = ctx.limits.idleTimeoutMs;
  const served = new WeakSet<Socket>();
  server.on('connection', function trackClient(socket: Socket) {
    track(ctx, socket);
    socket.on('error', () => socket.destroy());
  });
  server.on('request', function onPlainRequest(req: IncomingMessage, res: ServerResponse) {
    if (served.has(req.socket)) {
      answerResponse(res, report(ctx, new ProxyRefusal(400, 'one request per connection: open a new one')));
      return;
    }
    served.add(req.socket);
    forwardHttpRequest(req, res, {
      policy: ctx.policy,
      connectTimeoutMs: ctx.limits.connectTimeoutMs,
      idleTimeoutMs: ctx.limits.idleTimeoutMs,
      signal: ctx.signal,
      track: (s) => track(ctx, s),
    }).catch((e: unknown) => answerResponse(res, report(ctx, asRefusal(e))));
  });
  server.on('connect', function onConnect(req: IncomingMessage, socket: Socket, head: Buffer) {
    tunnel(ctx, req, socket, head).catch((e: unknown) => answerSocket(socket, report(ctx, asRefusal(e))));
  });
  server.on('upgrade', function onUpgrade(_req: IncomingMessage, socket: Socket) {
    answerSocket(
      socket,
      report(ctx, new ProxyRefusal(400, 'protocol upgrades over plain HTTP are not proxied: use CONNECT')),
    );
  });
  server.on('clientError', function onClientError(e: Error & { code?: string }, socket: Socket) {
    const tooLarge = e.code === 'HPE_HEADER_OVERFLOW';
    const status = e.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 504 : 400;
    const message = tooLarge ? 'the request head is too large' : `bad request: ${e.message}`;
    answerSocket(socket, report(ctx, new ProxyRefusal(status, message)));
  });
  return server;
}

function track(ctx: ProxyContext, socket: Socket): void {
  if (ctx.signal.aborted) {
    socket.destroy();
    return;
  }
  ctx.sockets.add(socket);
  socket.once('close', () => ctx.sockets.delete(socket));
}

/** A CONNECT: check the target, connect, answer 200, then pipe bytes both ways until either ends. */
async function tunnel(ctx: ProxyContext, req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
  const target = parseAuthority(req.url ?? '', undefined);
  const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(ctx.limits.connectTimeoutMs)]);
  const allowed = await checkTarget(ctx.policy, target, signal);
  const upstream = await connectTarget(allowed, ctx.limits.connectTimeoutMs);
  track(ctx, upstream);
  if (client.destroyed) {
    upstream.destroy();
    return;
  }
  const closeBoth = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const s of [client, upstream]) {
    s.setTimeout(ctx.limits.idleTimeoutMs, closeBoth);
    s.on('error', closeBoth);
    s.on('close', closeBoth);
  }
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  if (head.length > 0) upstream.write(head);
  client.pipe(upstream);
  upstream.pipe(client);
}

function report(ctx: ProxyContext, r: ProxyRefusal): ProxyRefusal {
  try {
    ctx.onRefusal?.({ status: r.status, message: r.message });
  } catch {
    // a failing listener never stops the answer
  }
  return r;
}

function asRefusal(e: unknown): ProxyRefusal {
  return e instanceof ProxyRefusal ? e : new ProxyRefusal(502, `the proxy failed: ${errorMessage(e)}`);
}

const REASONS: Record<ProxyRefusal['status'], string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  502: 'Bad Gateway',
  504: 'Gateway Timeout',
};

function refusalBody(r: ProxyRefusal): string {
  return `tool-dispatch sandbox proxy: ${r.message}\n`;
}

function answerResponse(res: ServerResponse, r: ProxyRefusal): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = refusalBody(r);
  res.shouldKeepAlive = false;
  res.writeHead(r.status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-td-sandbox-proxy': 'refused',
  });
  res.end(body);
}

/** Answers on a raw socket (CONNECT, upgrades, unparsable requests) and closes it. */
function answerSocket(socket: Socket, r: ProxyRefusal): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const body = refusalBody(r);
  socket.end(
    `HTTP/1.1 ${r.status} ${REASONS[r.status]}\r\ncontent-type: text/plain; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nx-td-sandbox-proxy: refused\r\nconnection: close\r\n\r\n${body}`,
  );
  socket.setTimeout(1000, () => socket.destroy());
}
