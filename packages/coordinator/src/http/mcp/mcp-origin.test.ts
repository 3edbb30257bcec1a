import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { rebindingProblem } from './mcp-origin.js';

/** The parts of a request the rule reads: its Host and Origin, and the address it arrived on. */
const request = (localAddress: string, host: string | undefined, origin?: string) =>
  ({
    headers: { ...(host === undefined ? {} : { host }), ...(origin === undefined ? {} : { origin }) },
    raw: { socket: { localAddress } },
  }) as unknown as FastifyRequest;

describe('rebindingProblem', () => {
  it('refuses a Host that is not a loopback name on a loopback address, IPv4, IPv6 and mapped', () => {
    for (const local of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1'])
      expect(rebindingProblem(request(local, 'evil.example.com:8080')), local).toMatch(/is not a loopback name/);
    expect(rebindingProblem(request('127.0.0.1', undefined))).toMatch(/is not a loopback name/);
  });

  it('accepts loopback names on a loopback address, with or without a port, in any case', () => {
    for (const host of ['localhost', 'LOCALHOST:8080', '127.0.0.1:8080', '127.200.3.4', '[::1]:8080', '[::1]'])
      expect(rebindingProblem(request('127.0.0.1', host)), host).toBeUndefined();
  });

  it('leaves the Host alone on a non-loopback address (a coordinator behind a proxy or in a cluster)', () => {
    expect(rebindingProblem(request('10.0.0.5', 'mcp.example.com'))).toBeUndefined();
    expect(rebindingProblem(request('::ffff:10.0.0.5', 'mcp.example.com:443'))).toBeUndefined();
  });

  it('refuses an Origin other than the Host, and one that is not a URL', () => {
    expect(rebindingProblem(request('10.0.0.5', 'mcp.example.com', 'https://evil.example.com'))).toMatch(
      /is not the host this request was sent to/,
    );
    expect(rebindingProblem(request('127.0.0.1', '127.0.0.1:8080', 'http://127.0.0.1:9999'))).toMatch(
      /is not the host/,
    );
    expect(rebindingProblem(request('127.0.0.1', 'localhost:8080', 'null'))).toMatch(/is not a URL/);
  });

  it('accepts an Origin of the Host itself', () => {
    expect(rebindingProblem(request('127.0.0.1', 'localhost:8080', 'http://localhost:8080'))).toBeUndefined();
    expect(rebindingProblem(request('10.0.0.5', 'mcp.example.com', 'https://mcp.example.com'))).toBeUndefined();
  });
});
