import { type IncomingMessage, request, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errorCode, errorMessage } from '../support/node-error.js';
import { pinnedLookup } from './net-guard.js';
import {
  type AllowedTarget,
  checkTarget,
  formatTarget,
  ProxyRefusal,
  parseAuthority,
  type TargetPolicy,
} from './sandbox-proxy-target.js';

/** Headers of one hop only (RFC 9110 §7.6.1), never forwarded; the proxy adds its own framing. */
const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export interface ForwardOptions {
  policy: TargetPolicy;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  /** Aborted when the proxy closes. */
  signal: AbortSignal;
  /** Called with each upstream socket, so the proxy can destroy it at close. */
  track: (socket: Socket) => void;
}

/**
 * Forwards one absolute-form plain-HTTP request (`GET http://host/path`) after checking its
 * target, and closes the connection after the response: one request per client connection.
 */
export async function forwardHttpRequest(req: IncomingMessage, res: ServerResponse, o: ForwardOptions): Promise<void> {
  res.shouldKeepAlive = false;
  const { target, path } = requestTarget(req);
  const signal = AbortSignal.any([o.signal, AbortSignal.timeout(o.connectTimeoutMs)]);
  const allowed = await checkTarget(o.policy, target, signal);
  await relay(req, res, allowed, path, o);
}

/** The request's target from its absolute URL, refused unless exactly one Host header names the same. */
function requestTarget(req: IncomingMessage) {
  const url = req.url ?? '';
  if (/^https:\/\//i.test(url)) throw new ProxyRefusal(400, 'an https URL goes through CONNECT, not a plain request');
  const m = /^http:\/\/([^/?#]*)([/?][^#]*)?$/i.exec(url);
  if (!m) {
    throw new ProxyRefusal(
      400,
      `the proxy takes absolute http:// URLs and CONNECT, not ${JSON.stringify(url.slice(0, 200))}`,
    );
  }
  const authority = m[1] as string;
  if (authority.includes('@')) throw new ProxyRefusal(400, 'a user name or password in the URL is not forwarded');
  const target = parseAuthority(authority, 80);
  const hosts = hostHeaders(req);
  if (hosts.length !== 1)
    throw new ProxyRefusal(400, `the request must have exactly one Host header, not ${hosts.length}`);
  let fromHeader: ReturnType<typeof parseAuthority>;
  try {
    fromHeader = parseAuthority(hosts[0] as string, 80);
  } catch {
    throw new ProxyRefusal(403, `the Host header ${JSON.stringify(hosts[0])} is not a host[:port]`);
  }
  if (fromHeader.host.host !== target.host.host || fromHeader.port !== target.port) {
    throw new ProxyRefusal(
      403,
      `the Host header (${formatTarget(fromHeader.host, fromHeader.port)}) differs from the URL's host (${formatTarget(target.host, target.port)})`,
    );
  }
  const rest = m[2] ?? '/';
  return { target, path: rest.startsWith('?') ? `/${rest}` : rest };
}

function hostHeaders(req: IncomingMessage): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    if ((req.rawHeaders[i] as string).toLowerCase() === 'host') out.push(req.rawHeaders[i + 1] as string);
  }
  return out;
}

/** The raw headers without the hop-by-hop ones and those the Connection header names. */
function endToEndHeaders(raw: readonly string[], connection: string | undefined): string[] {
  const named = new Set((connection ?? '').split(',').map((t) => t.trim().toLowerCase()));
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (!HOP_BY_HOP.has(name) && !named.has(name)) out.push(raw[i] as string, raw[i + 1] as string);
  }
  return out;
}

function relay(req: IncomingMessage, res: ServerResponse, target: AllowedTarget, path: string, o: ForwardOptions) {
  const headers = endToEndHeaders(req.rawHeaders, req.headers.connection);
  // The body is re-framed: Node decoded the client's framing; a chunked body goes on chunked.
  if (req.headers['transfer-encoding'] !== undefined) headers.push('Transfer-Encoding', 'chunked');
  headers.push('Connection', 'close');
  return new Promise<void>(function relayExchange(resolve, reject) {
    const upstream = request({
      host: target.host.host,
      port: target.port,
      method: req.method,
      path,
      headers,
      setHost: false,
      agent: false,
      lookup: pinnedLookup(target.checked),
      timeout: o.connectTimeoutMs,
    });
    upstream.on('socket', function trackUpstream(socket) {
      o.track(socket);
      socket.setTimeout(o.idleTimeoutMs);
    });
    upstream.on('timeout', function upstreamIdle() {
      upstream.destroy(new ProxyRefusal(504, `${formatTarget(target.host, target.port)} did not answer in time`));
    });
    upstream.on('response', function relayResponse(answer) {
      res.writeHead(
        answer.statusCode ?? 502,
        answer.statusMessage,
        endToEndHeaders(answer.rawHeaders, answer.headers.connection),
      );
      answer.pipe(res);
      answer.on('error', () => res.destroy());
      res.on('close', function responseDone() {
        upstream.destroy();
        resolve();
      });
    });
    upstream.on('error', function upstreamFailed(e) {
      if (res.headersSent) {
        res.destroy();
        resolve();
        return;
      }
      const reason =
        e instanceof ProxyRefusal
          ? e
          : new ProxyRefusal(502, `${formatTarget(target.host, target.port)}: ${errorCode(e) ?? errorMessage(e)}`);
      reject(reason);
    });
    req.on('close', function clientGone() {
      if (!res.writableFinished && req.destroyed && !req.complete) upstream.destroy();
    });
    req.pipe(upstream);
  });
}
