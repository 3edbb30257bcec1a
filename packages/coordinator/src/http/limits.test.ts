import { describe, expect, it } from 'vitest';
import { HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS, resolveHttpTimeouts } from './limits.js';

describe('resolveHttpTimeouts', () => {
  it('takes HEADERS_TIMEOUT_MS and REQUEST_TIMEOUT_MS when nothing is given, checking once a second', () => {
    expect(resolveHttpTimeouts()).toEqual({
      headersMs: HEADERS_TIMEOUT_MS,
      requestMs: REQUEST_TIMEOUT_MS,
      checkEveryMs: 1_000,
    });
  });

  it('checks at least three times per headers timeout when it is short', () => {
    expect(resolveHttpTimeouts({ headersMs: 300, requestMs: 600 }).checkEveryMs).toBe(100);
  });

  it('refuses a headers timeout longer than the request timeout, as Node would', () => {
    expect(() => resolveHttpTimeouts({ headersMs: 2_000, requestMs: 1_000 })).toThrow(/must not exceed/);
  });

  it('refuses timeouts that are not positive integers', () => {
    expect(() => resolveHttpTimeouts({ requestMs: 0 })).toThrow(/requestMs must be a positive integer/);
    expect(() => resolveHttpTimeouts({ headersMs: 1.5 })).toThrow(/headersMs must be a positive integer/);
  });
});
