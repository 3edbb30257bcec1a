import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { raceAbort, ToolError } from '@tool-dispatch/shared';
import { errorCode, errorMessage } from '../support/node-error.js';

/** Resolves a host name to every address it has. */
export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

/** A URL that passed the guard, with the addresses its connection must use. */
export interface CheckedTarget {
  url: URL;
  /** What the connection is pinned to: the addresses that were checked (DNS rebinding). */
  addresses: LookupAddress[];
}

export interface CheckUrlOptions {
  /** TD_HTTP_ALLOW entries: `host` or `host:port`, matched against the URL's host. */
  allow: readonly string[];
  signal: AbortSignal;
  /** Injected in tests; defaults to the system resolver. */
  resolveHost?: ResolveHost;
}

const defaultResolveHost: ResolveHost = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * Parses `raw` and refuses what http_request and fetch_page must not reach: schemes other than
 * http and https, and hosts resolving to a non-public address (loopback, private, link-local,
 * unspecified, CGNAT, multicast, ULA… in any spelling) unless the host is in `allow`.
 */
export async function checkUrl(raw: string | URL, options: CheckUrlOptions): Promise<CheckedTarget> {
  const url = parseHttpUrl(raw);
  const addresses = await resolveTarget(url, options.resolveHost ?? defaultResolveHost, options.signal);
  if (isHostAllowed(url, options.allow)) return { url, addresses };
  const blocked = addresses.find((a) => isPrivateAddress(a.address));
  if (blocked) {
    const resolved = blocked.address === bareHost(url) ? '' : ` (it resolves to ${blocked.address})`;
    throw new ToolError(
      'handler_error',
      `refused to connect to ${url.host}${resolved}: the address is private, loopback, link-local or otherwise ` +
        `not public, and such addresses are refused; the operator can allow this host with TD_HTTP_ALLOW=${url.host}`,
    );
  }
  return { url, addresses };
}

/** Parses a URL and refuses every scheme but http and https. */
export function parseHttpUrl(raw: string | URL): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ToolError('handler_error', `${JSON.stringify(String(raw))} is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ToolError('handler_error', `only http and https URLs are allowed, not ${url.protocol.slice(0, -1)}`);
  }
  return url;
}

/**
 * Whether the URL's host (as the URL parser spells it) is in the allow list, as `host`
 * (any port) or `host:port` (the URL's port, or its scheme's default).
 */
export function isHostAllowed(url: URL, allow: readonly string[]): boolean {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return allow.some((entry) => {
    const parsed = parseAllowEntry(entry);
    return parsed !== undefined && parsed.host === url.hostname && (parsed.port === undefined || parsed.port === port);
  });
}

function parseAllowEntry(entry: string): { host: string; port: string | undefined } | undefined {
  const text = entry.trim();
  let host: string;
  let port: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) {
    host = `[${bracketed[1]}]`;
    port = bracketed[2];
  } else if (text.split(':').length === 2) {
    [host, port] = text.split(':') as [string, string];
    if (!/^\d+$/.test(port)) return undefined;
  } else if (text.includes(':')) {
    host = `[${text}]`; // a bare IPv6 address
  } else {
    host = text;
  }
  try {
    // Spell the host as the URL parser does, so `LOCALHOST` or `[::ffff:127.0.0.1]` match.
    return { host: new URL(`http://${host}/`).hostname, port: port === undefined ? undefined : String(Number(port)) };
  } catch {
    return undefined;
  }
}

async function resolveTarget(url: URL, resolveHost: ResolveHost, signal: AbortSignal): Promise<LookupAddress[]> {
  const host = bareHost(url);
  const family = isIP(host);
  if (family !== 0) return [{ address: host, family }];
  signal.throwIfAborted();
  try {
    const addresses = await raceAbort(resolveHost(host), signal, () => {
      throw signal.reason;
    });
    if (addresses.length === 0) throw new Error('no addresses');
    return addresses;
  } catch (e) {
    if (signal.aborted) throw e;
    throw new ToolError('handler_error', `cannot resolve the host ${host}: ${errorCode(e) ?? errorMessage(e)}`);
  }
}

/** The URL's host without IPv6 brackets. */
function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * A `lookup` for net/tls.connect that answers only with the checked addresses, so the
 * connection goes where the guard looked, whatever DNS says a moment later.
 */
export function pinnedLookup(target: CheckedTarget): LookupFunction {
  const expected = bareHost(target.url);
  return function lookupPinned(hostname, options, callback) {
    if (hostname !== expected) {
      const error = Object.assign(new Error(`unexpected lookup of ${hostname}`), { code: 'ENOTFOUND' });
      callback(error, '', 0);
      return;
    }
    const family = typeof options === 'object' ? options.family : undefined;
    const wanted =
      family === 4 || family === 6 ? target.addresses.filter((a) => a.family === family) : target.addresses;
    if (typeof options === 'object' && options.all) {
      (callback as unknown as (e: null, all: LookupAddress[]) => void)(null, wanted);
      return;
    }
    const first = wanted[0];
    if (!first) callback(Object.assign(new Error(`no IPv${family} address`), { code: 'ENOTFOUND' }), '', 0);
    else callback(null, first.address, first.family);
  };
}

// ---- address classification ----

type Cidr4 = readonly [number, number];

/** IPv4 ranges that are not public (IANA special-purpose registry), as [network, prefix length]. */
const NON_PUBLIC_V4: readonly Cidr4[] = [
  [v4(0, 0, 0, 0), 8], // "this network", incl. 0.0.0.0
  [v4(10, 0, 0, 0), 8],
  [v4(100, 64, 0, 0), 10], // CGNAT
  [v4(127, 0, 0, 0), 8],
  [v4(169, 254, 0, 0), 16], // link-local, cloud metadata
  [v4(172, 16, 0, 0), 12],
  [v4(192, 0, 0, 0), 24],
  [v4(192, 0, 2, 0), 24],
  [v4(192, 88, 99, 0), 24],
  [v4(192, 168, 0, 0), 16],
  [v4(198, 18, 0, 0), 15],
  [v4(198, 51, 100, 0), 24],
  [v4(203, 0, 113, 0), 24],
  [v4(224, 0, 0, 0), 4], // multicast
  [v4(240, 0, 0, 0), 4], // reserved, incl. broadcast
];

function v4(a: number, b: number, c: number, d: number): number {
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

/**
 * Whether an IP address (canonical IPv4 or IPv6 text) is not a public unicast address.
 * IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by it.
 * Anything that does not parse counts as private: the guard fails closed.
 */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address.split('%')[0] ?? '');
  if (family === 4) return isPrivateV4(parseV4(address));
  if (family === 6) {
    const words = parseV6(address.split('%')[0] as string);
    return words === undefined || isPrivateV6(words);
  }
  return true;
}

function parseV4(address: string): number {
  const [a = 0, b = 0, c = 0, d = 0] = address.split('.').map(Number);
  return v4(a, b, c, d);
}

function isPrivateV4(ip: number): boolean {
  return NON_PUBLIC_V4.some(([network, bits]) => ip >>> (32 - bits) === network >>> (32 - bits));
}

/** Eight 16-bit words of an IPv6 address (already validated by `isIP`), or undefined. */
function parseV6(address: string): number[] | undefined {
  let text = address;
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    // A trailing dotted IPv4 part (`::ffff:127.0.0.1`) becomes its two hex words.
    const ip = parseV4(last);
    text = `${text.slice(0, lastColon + 1)}${(ip >>> 16).toString(16)}:${(ip & 0xffff).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string | undefined) =>
    part ? part.split(':').map((w) => (/^[0-9a-f]{1,4}$/i.test(w) ? Number.parseInt(w, 16) : Number.NaN)) : [];
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  const missing = 8 - head.length - rest.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined;
  const words = [...head, ...new Array<number>(missing).fill(0), ...rest];
  return words.every((w) => !Number.isNaN(w)) ? words : undefined;
}

function isPrivateV6(w: number[]): boolean {
  const [w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0, w6 = 0, w7 = 0] = w;
  const embedded = ((w6 << 16) | w7) >>> 0;
  const zeroTo4 = w0 === 0 && w1 === 0 && w2 === 0 && w3 === 0 && w4 === 0;
  if (zeroTo4 && (w5 === 0 || w5 === 0xffff)) {
    // ::, ::1, IPv4-compatible ::a.b.c.d and IPv4-mapped ::ffff:a.b.c.d
    return isPrivateV4(embedded);
  }
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) return isPrivateV4(embedded); // NAT64
  if (w0 === 0x2002) return isPrivateV4(((w1 << 16) | w2) >>> 0); // 6to4
  if (w0 === 0x2001 && (w1 === 0 || w1 === 0x0db8 || (w1 === 2 && w2 === 0))) return true; // Teredo, docs, benchmarking
  // Only 2000::/3 is global unicast: ULA fc00::/7, link-local fe80::/10, multicast ff00::/8… are not.
  return (w0 & 0xe000) !== 0x2000;
}
