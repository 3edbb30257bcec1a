import type { CanonicalHost, NetPattern } from '@tool-dispatch/shared';

/** The ports a pattern without `:port` allows: plain HTTP and HTTPS. */
export const DEFAULT_PATTERN_PORTS: readonly number[] = [80, 443];

/** Whether a pattern allows `host` (canonical) on `port`. */
export function matchesNetPattern(pattern: NetPattern, target: CanonicalHost, port: number): boolean {
  const portOk = pattern.port === undefined ? DEFAULT_PATTERN_PORTS.includes(port) : pattern.port === port;
  if (!portOk || pattern.isIp !== target.isIp) return false;
  if (!pattern.wildcard) return pattern.host === target.host;
  return target.host.endsWith(`.${pattern.host}`);
}
