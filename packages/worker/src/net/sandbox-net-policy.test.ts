import { ConfigError, canonicalHost, parseNetPattern, sandboxNetOf } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { matchesNetPattern } from './sandbox-net-policy.js';

const name = (host: string) => ({ host, isIp: false });

describe('sandboxNetOf', () => {
  it.each([undefined, '', '  ', 'none'])('reads %j as no network', (value) => {
    expect(sandboxNetOf(value)).toEqual({ mode: 'none' });
  });

  it('reads host as the worker network', () => {
    expect(sandboxNetOf('host')).toEqual({ mode: 'host' });
  });

  it('reads a comma list as patterns in their canonical spelling', () => {
    expect(sandboxNetOf(' Registry.NPMjs.org , *.github.com:443,10.0.0.5:8080,[::1]:80, ')).toEqual({
      mode: 'allow',
      patterns: ['registry.npmjs.org', '*.github.com:443', '10.0.0.5:8080', '[::1]:80'],
    });
  });

  it.each([
    ['none,registry.npmjs.org', /"none" and "host" stand alone/],
    ['example.com:0', /"example.com:0" is not a host\[:port\] pattern: the port must be a number from 1 to 65535/],
    ['example.com:70000', /the port must be/],
    ['example.com:http', /the port must be/],
    ['*', /the host is empty|\* may only stand/],
    ['*example.com', /\* may only stand as the whole first label/],
    ['a.*.example.com', /\* may only stand/],
    ['*.10.0.0.1', /a wildcard applies to names/],
    ['exa mple.com', /holds a character no host name has/],
    ['exa\u0000mple.com', /holds a character no host name has/],
    ['bücher.de', /holds a character no host name has/],
    ['a..b', /empty or malformed label/],
    ['-a.com', /malformed label/],
    ['::1', /expected a name/],
    ['[zz::1]', /is not an IPv6 address/],
    ['example.123', /ends in a number but is not an IPv4 address/],
    ['https://example.com', /not a host\[:port\] pattern/],
  ])('refuses %j with an error naming it', (value, message) => {
    expect(() => sandboxNetOf(value)).toThrow(ConfigError);
    expect(() => sandboxNetOf(value)).toThrow(message);
    expect(() => sandboxNetOf(value)).toThrow(/^TD_SANDBOX_NET: /);
  });
});

describe('canonicalHost', () => {
  it('lower-cases and drops one trailing dot', () => {
    expect(canonicalHost('Registry.NPMJS.org.', false)).toEqual(name('registry.npmjs.org'));
    expect(typeof canonicalHost('example.com..', false)).toBe('string');
  });

  it.each([
    ['2130706433', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['127.0.0.1.', '127.0.0.1'],
  ])('reads the IPv4 spelling %s as %s', (raw, ip) => {
    expect(canonicalHost(raw, false)).toEqual({ host: ip, isIp: true });
  });

  it('reads a bracketed IPv6 address in its compressed form', () => {
    expect(canonicalHost('0:0:0:0:0:0:0:1', true)).toEqual({ host: '::1', isIp: true });
    expect(canonicalHost('::FFFF:127.0.0.1', true)).toEqual({ host: '::ffff:7f00:1', isIp: true });
  });

  it.each(['a\u0000b.com', 'a%2eb.com', 'user@host', 'a/b', 'a b', 'a#b', 'é.com', '', '.'])(
    'refuses the host %j',
    (raw) => {
      expect(typeof canonicalHost(raw, false)).toBe('string');
    },
  );
});

describe('matchesNetPattern', () => {
  const matches = (pattern: string, host: string, port: number) => {
    const target = canonicalHost(host, host.includes(':'));
    if (typeof target === 'string') throw new Error(target);
    return matchesNetPattern(parseNetPattern(pattern), target, port);
  };

  it('allows a name without a port on 80 and 443 only', () => {
    expect(matches('registry.npmjs.org', 'registry.npmjs.org', 443)).toBe(true);
    expect(matches('registry.npmjs.org', 'registry.npmjs.org', 80)).toBe(true);
    expect(matches('registry.npmjs.org', 'registry.npmjs.org', 8080)).toBe(false);
    expect(matches('registry.npmjs.org', 'registry.npmjs.org', 22)).toBe(false);
  });

  it('allows a name with a port on that port only', () => {
    expect(matches('example.com:8443', 'example.com', 8443)).toBe(true);
    expect(matches('example.com:8443', 'example.com', 443)).toBe(false);
  });

  it('matches names exactly, not as a suffix or a prefix', () => {
    expect(matches('github.com', 'api.github.com', 443)).toBe(false);
    expect(matches('github.com', 'notgithub.com', 443)).toBe(false);
    expect(matches('github.com', 'github.com.evil.com', 443)).toBe(false);
  });

  it('lets *. match every subdomain but not the apex', () => {
    expect(matches('*.github.com:443', 'api.github.com', 443)).toBe(true);
    expect(matches('*.github.com:443', 'a.b.github.com', 443)).toBe(true);
    expect(matches('*.github.com:443', 'github.com', 443)).toBe(false);
    expect(matches('*.github.com:443', 'evilgithub.com', 443)).toBe(false);
    expect(matches('*.github.com:443', 'api.github.com', 80)).toBe(false);
  });

  it('reaches an IP address only when it is listed as one', () => {
    expect(matches('10.0.0.5', '10.0.0.5', 443)).toBe(true);
    expect(matches('10.0.0.5', '167772165', 443)).toBe(true);
    expect(matches('example.com', '93.184.216.34', 443)).toBe(false);
    expect(matches('[::1]:80', '::1', 80)).toBe(true);
    expect(matches('[::1]:80', '::2', 80)).toBe(false);
  });

  it('matches names in any case and with a trailing dot', () => {
    expect(matches('registry.npmjs.org', 'REGISTRY.npmjs.org.', 443)).toBe(true);
  });
});
