import { isIP } from 'node:net';
import { ConfigError } from './errors.js';

// TD_SANDBOX_NET and an MCP server's `net`: the allow list's patterns, parsed once, in one spelling,
// by the settings (at start) and by the worker's proxy (which matches requests against them).

/** What `TD_SANDBOX_NET` (or an MCP server's `net`) asks for. */
export type SandboxNet = { mode: 'none' } | { mode: 'host' } | { mode: 'allow'; patterns: string[] };

/** One allow-list entry: a name (or `*.` + a suffix, or an IP literal), and a port or none. */
export interface NetPattern {
  /** Lower case, no trailing dot; an IPv6 literal without brackets. */
  host: string;
  /** `*.host`: any name under `host`, not `host` itself. */
  wildcard: boolean;
  isIp: boolean;
  /** Undefined: ports 80 and 443 only. */
  port: number | undefined;
}

/** A request's target host as the proxy matches and connects to it. */
export interface CanonicalHost {
  /** Lower case, no trailing dot, an IPv4 literal in dotted form, an IPv6 one compressed and bare. */
  host: string;
  isIp: boolean;
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const NAME_CHARS = /^[a-z0-9._-]+$/;

/**
 * Parses TD_SANDBOX_NET: unset, empty or `none` (no network), `host` (the worker's own), or a
 * comma list of `host[:port]` patterns. A bad pattern is a ConfigError naming it.
 */
export function sandboxNetOf(value: string | undefined, name = 'TD_SANDBOX_NET'): SandboxNet {
  const text = (value ?? '').trim();
  if (text === '' || text === 'none') return { mode: 'none' };
  if (text === 'host') return { mode: 'host' };
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const hint = `(${name} must be none, host, or a comma list of host[:port] patterns such as registry.npmjs.org or *.github.com:443)`;
  if (entries.some((e) => e === 'none' || e === 'host')) {
    throw new ConfigError(`${name}: "none" and "host" stand alone, not in a list of patterns (${text}) ${hint}`);
  }
  try {
    return { mode: 'allow', patterns: entries.map((e) => formatNetPattern(parseNetPattern(e, name))) };
  } catch (e) {
    throw e instanceof ConfigError ? new ConfigError(`${e.message} ${hint}`) : e;
  }
}

/** Parses one `host[:port]` pattern (`registry.npmjs.org`, `*.github.com:443`, `10.0.0.5:8080`, `[::1]:80`). */
export function parseNetPattern(entry: string, name = 'TD_SANDBOX_NET'): NetPattern {
  const fail = (why: string): never => {
    throw new ConfigError(`${name}: ${JSON.stringify(entry)} is not a host[:port] pattern: ${why}`);
  };
  const split = splitHostPort(entry.trim().toLowerCase());
  if (!split) return fail('expected a name, *.name or an IP address, then :port or nothing');
  const port = split.port === undefined ? undefined : parsePort(split.port);
  if (port === null) return fail(`the port must be a number from 1 to 65535, not ${split.port}`);
  const wildcard = split.host.startsWith('*.');
  const hostText = wildcard ? split.host.slice(2) : split.host;
  if (hostText.includes('*')) return fail('a * may only stand as the whole first label (*.example.com)');
  const host = canonicalHost(hostText, split.bracketed);
  if (typeof host === 'string') return fail(host);
  if (wildcard && host.isIp) return fail('a wildcard applies to names, not to IP addresses');
  return { host: host.host, wildcard, isIp: host.isIp, port };
}

/** The pattern written back in its canonical spelling. */
export function formatNetPattern(p: NetPattern): string {
  const host = p.isIp && p.host.includes(':') ? `[${p.host}]` : p.host;
  return `${p.wildcard ? '*.' : ''}${host}${p.port === undefined ? '' : `:${p.port}`}`;
}

/** Splits `host:port`, `[v6]:port`, `host` or `[v6]`; undefined when it is none of them. */
export function splitHostPort(
  text: string,
): { host: string; port: string | undefined; bracketed: boolean } | undefined {
  const bracketed = /^\[([^\]]*)\](?::([^:]*))?$/.exec(text);
  if (bracketed) return { host: bracketed[1] as string, port: bracketed[2], bracketed: true };
  const parts = text.split(':');
  if (parts.length > 2) return undefined; // a bare IPv6 address must be bracketed
  return { host: parts[0] as string, port: parts[1], bracketed: false };
}

/** A port number from its decimal text, or null when it is not one (1-65535, digits only). */
export function parsePort(text: string): number | null {
  if (!/^\d{1,5}$/.test(text)) return null;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : null;
}

/**
 * The host in the one spelling the proxy matches and connects to, or why it is refused: only
 * letters, digits, `-`, `_` and dots (punycode for international names; no NUL, `%`, `@`,
 * spaces…), labels of 1-63, 253 in all, one trailing dot dropped; a name that ends in a number
 * is an IPv4 address in another spelling (`2130706433`, `0x7f.1`) and becomes its dotted form.
 */
export function canonicalHost(raw: string, bracketed: boolean): CanonicalHost | string {
  const text = raw.toLowerCase();
  if (bracketed) {
    if (isIP(text) !== 6 || !/^[0-9a-f:.]+$/.test(text)) return `[${raw}] is not an IPv6 address`;
    return { host: new URL(`http://[${text}]/`).hostname.slice(1, -1), isIp: true };
  }
  const name = text.endsWith('.') ? text.slice(0, -1) : text;
  if (name === '') return 'the host is empty';
  if (!NAME_CHARS.test(name)) return `${JSON.stringify(raw)} holds a character no host name has`;
  if (name.length > 253) return 'the host is longer than 253 characters';
  const labels = name.split('.');
  const last = labels[labels.length - 1] as string;
  if (/^(?:\d+|0x[0-9a-f]*)$/.test(last)) return ipv4Literal(name, raw);
  if (!labels.every((l) => LABEL.test(l))) return `${JSON.stringify(raw)} has an empty or malformed label`;
  return { host: name, isIp: false };
}

function ipv4Literal(name: string, raw: string): CanonicalHost | string {
  let host: string;
  try {
    host = new URL(`http://${name}/`).hostname; // the WHATWG IPv4 parser: decimal, octal, hex, short forms
  } catch {
    return `${JSON.stringify(raw)} ends in a number but is not an IPv4 address`;
  }
  return isIP(host) === 4 ? { host, isIp: true } : `${JSON.stringify(raw)} is not an IPv4 address`;
}
