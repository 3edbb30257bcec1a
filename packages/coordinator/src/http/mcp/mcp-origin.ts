import type { FastifyRequest } from 'fastify';

// DNS rebinding (MCP spec, transports "Security warning"): a web page whose name resolves to
// 127.0.0.1 could otherwise drive a coordinator on the user's machine through the browser. So a
// request that reached /mcp on a loopback address must name a loopback host, and a browser's
// request (one with an Origin) must come from the host it is sent to.

const LOOPBACK_NAMES = new Set(['localhost', '[::1]', '::1']);

const isLoopbackAddress = (address: string | undefined): boolean =>
  address !== undefined && (/^(::ffff:)?127\./.test(address) || address === '::1');

/** The host name of a Host header or URL host (`[::1]:8080` → `[::1]`, `a.b:80` → `a.b`), lower case. */
function hostName(host: string): string {
  const h = host.toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.replace(/:\d+$/, '');
}

const isLoopbackName = (name: string): boolean => LOOPBACK_NAMES.has(name) || /^127(\.\d{1,3}){3}$/.test(name);

/** Why the request may be a DNS-rebinding attempt (answered 403), or undefined when it is fine. */
export function rebindingProblem(request: FastifyRequest): string | undefined {
  const host = request.headers.host ?? '';
  if (isLoopbackAddress(request.raw.socket.localAddress) && !isLoopbackName(hostName(host)))
    return `Host ${JSON.stringify(host.slice(0, 100))} is not a loopback name, and this request reached /mcp on a loopback address (DNS rebinding protection): use localhost, 127.0.0.1 or [::1]`;
  const origin = request.headers.origin;
  if (origin === undefined) return undefined;
  let originHost: string;
  try {
    originHost = new URL(origin).host.toLowerCase();
  } catch {
    return `Origin ${JSON.stringify(origin.slice(0, 100))} is not a URL`;
  }
  if (originHost !== host.toLowerCase())
    return `Origin ${JSON.stringify(origin.slice(0, 100))} is not the host this request was sent to: /mcp answers no cross-origin browser requests`;
  return undefined;
}
