import { connect, type Socket } from 'node:net';
import {
  type CanonicalHost,
  canonicalHost,
  formatNetPattern,
  isToolError,
  type NetPattern,
  parsePort,
  splitHostPort,
} from '@tool-dispatch/shared';
import { errorCode, errorMessage } from '../support/node-error.js';
import { type CheckedTarget, checkUrl, pinnedLookup, type ResolveHost } from './net-guard.js';
import { matchesNetPattern } from './sandbox-net-policy.js';

/** Why the proxy answers a request itself instead of forwarding it: an HTTP status and a sentence. */
export class ProxyRefusal extends Error {
  constructor(
    readonly status: 400 | 403 | 502 | 504,
    message: string,
  ) {
    super(message);
    this.name = 'ProxyRefusal';
  }
}

/** What one proxy checks every target against. */
export interface TargetPolicy {
  patterns: readonly NetPattern[];
  /** TD_HTTP_ALLOW: hosts that may resolve to private and loopback addresses. */
  httpAllow: readonly string[];
  /** Named in refusals, so the reader knows what to change (`TD_SANDBOX_NET`). */
  policyName: string;
  resolveHost: ResolveHost | undefined;
}

/** A target that passed: where to connect, pinned to the addresses the guard checked. */
export interface AllowedTarget {
  host: CanonicalHost;
  port: number;
  checked: CheckedTarget;
}

/** Parses `host:port` (CONNECT's authority, or a URL's with a default port) into a canonical target. */
export function parseAuthority(
  authority: string,
  defaultPort: number | undefined,
): { host: CanonicalHost; port: number } {
  const split = splitHostPort(authority);
  if (!split) throw new ProxyRefusal(400, `${JSON.stringify(authority)} is not a host:port`);
  const portText = split.port ?? (defaultPort === undefined ? undefined : String(defaultPort));
  if (portText === undefined) throw new ProxyRefusal(400, `${JSON.stringify(authority)} has no port`);
  const port = parsePort(portText);
  if (port === null) throw new ProxyRefusal(400, `${JSON.stringify(authority)} has no valid port`);
  const host = canonicalHost(split.host, split.bracketed);
  if (typeof host === 'string') throw new ProxyRefusal(400, `bad target host: ${host}`);
  return { host, port };
}

/** The host:port as written back in messages and URLs. */
export function formatTarget(host: CanonicalHost, port: number): string {
  return `${host.isIp && host.host.includes(':') ? `[${host.host}]` : host.host}:${port}`;
}

/**
 * Checks a target against the allow list, then resolves it once and checks every address as
 * http_request does (net-guard); throws a ProxyRefusal saying which rule refused it.
 */
export async function checkTarget(
  policy: TargetPolicy,
  target: { host: CanonicalHost; port: number },
  signal: AbortSignal,
): Promise<AllowedTarget> {
  const shown = formatTarget(target.host, target.port);
  if (!policy.patterns.some((p) => matchesNetPattern(p, target.host, target.port))) {
    const allowed = policy.patterns.map(formatNetPattern).join(', ');
    const ip = target.host.isIp ? ' (an IP address is reached only when listed as one)' : '';
    throw new ProxyRefusal(
      403,
      `${shown} is not in ${policy.policyName}${ip}; allowed: ${allowed} (a pattern without :port allows ports 80 and 443)`,
    );
  }
  const scheme = target.port === 443 ? 'https' : 'http';
  try {
    const checked = await checkUrl(`${scheme}://${shown}/`, {
      allow: policy.httpAllow,
      signal,
      ...(policy.resolveHost ? { resolveHost: policy.resolveHost } : {}),
    });
    return { ...target, checked };
  } catch (e) {
    if (signal.aborted) throw new ProxyRefusal(504, `resolving ${shown} took too long`);
    if (isToolError(e) && e.message.startsWith('refused')) throw new ProxyRefusal(403, e.message);
    throw new ProxyRefusal(502, errorMessage(e));
  }
}

/** Opens a TCP connection to an allowed target, to the addresses that were checked only. */
export function connectTarget(target: AllowedTarget, timeoutMs: number): Promise<Socket> {
  return new Promise<Socket>(function openUpstream(resolve, reject) {
    const socket = connect({
      host: target.host.host,
      port: target.port,
      lookup: pinnedLookup(target.checked),
      allowHalfOpen: true,
    });
    const timer = setTimeout(function connectTimedOut() {
      socket.destroy();
      reject(
        new ProxyRefusal(504, `connecting to ${formatTarget(target.host, target.port)} took over ${timeoutMs} ms`),
      );
    }, timeoutMs);
    socket.once('connect', function upstreamConnected() {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('error', function upstreamFailed(e) {
      clearTimeout(timer);
      socket.destroy();
      const code = errorCode(e);
      reject(
        new ProxyRefusal(
          502,
          `cannot connect to ${formatTarget(target.host, target.port)}: ${code ?? errorMessage(e)}`,
        ),
      );
    });
  });
}
