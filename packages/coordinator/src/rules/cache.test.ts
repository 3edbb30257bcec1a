import { describe, expect, it } from 'vitest';
import { hasCredentials, isCacheable, needsConfirmation } from './cache.js';
import { Catalog, resolveSpec } from './catalog.js';

const catalog = new Catalog();
const spec = (name: string) => catalog.get(name);
const url = 'https://example.test/page';

describe('isCacheable', () => {
  it('caches fetch_page, search_web and GET http_request', () => {
    expect(isCacheable(spec('fetch_page'), 'fetch_page', { url })).toBe(true);
    expect(isCacheable(spec('search_web'), 'search_web', { query: 'redis cluster' })).toBe(true);
    expect(isCacheable(spec('http_request'), 'http_request', { url })).toBe(true);
    expect(isCacheable(spec('http_request'), 'http_request', { url, method: 'get' })).toBe(true);
  });

  it('never caches http_request with a method other than GET', () => {
    for (const method of ['POST', 'put', 'DELETE', 'HEAD', 'options'])
      expect(isCacheable(spec('http_request'), 'http_request', { url, method })).toBe(false);
  });

  it('never caches other tools, read-only or not', () => {
    for (const name of ['read_files', 'find_files', 'calculate', 'find_tools', 'run_command', 'edit_file'])
      expect(isCacheable(spec(name), name, {})).toBe(false);
    const userTool = resolveSpec({ name: 'api_fetch', description: '', parameters: { type: 'object' } }, 'user');
    expect(isCacheable(userTool, 'api_fetch', { url })).toBe(false);
  });

  it('never caches a tool with no definition', () => {
    expect(isCacheable(undefined, 'fetch_page', { url })).toBe(false);
  });

  describe('when the request carries credentials', () => {
    const credentialHeaders = [
      'Authorization',
      'Proxy-Authorization',
      'Cookie',
      'X-API-Key',
      'x-api-key',
      'COOKIE',
      'X-Auth-User',
      'X-Access-Token',
      'x-csrf-TOKEN',
      'X-Client-Secret',
      'SECRET',
      'oauth',
    ];

    for (const header of credentialHeaders) {
      it(`never caches a GET http_request with a ${header} header`, () => {
        expect(isCacheable(spec('http_request'), 'http_request', { url, headers: { [header]: 'v' } })).toBe(false);
      });
    }

    it('never caches a URL with user info', () => {
      expect(isCacheable(spec('fetch_page'), 'fetch_page', { url: 'https://alice:pw@example.test/' })).toBe(false);
      expect(isCacheable(spec('fetch_page'), 'fetch_page', { url: 'https://alice@example.test/' })).toBe(false);
      expect(isCacheable(spec('http_request'), 'http_request', { url: 'https://:pw@example.test/' })).toBe(false);
    });

    const credentialParams = [
      'token',
      'access_token',
      'api_key',
      'apiKey',
      'KEY',
      'client_secret',
      'auth',
      'oauth_verifier',
      'X-Amz-Signature',
      'sig',
      'password',
      'sessionid',
      'JSESSIONID',
    ];
    for (const name of credentialParams) {
      it(`never caches a URL with a ?${name}= query parameter (fetch_page and GET http_request)`, () => {
        const withParam = `https://example.test/data?page=2&${encodeURIComponent(name)}=abc`;
        expect(isCacheable(spec('fetch_page'), 'fetch_page', { url: withParam })).toBe(false);
        expect(isCacheable(spec('http_request'), 'http_request', { url: withParam })).toBe(false);
      });
    }
  });

  describe('when the request carries no credentials', () => {
    it('caches a URL whose query parameters are named like nothing secret', () => {
      const plain = 'https://example.test/search?q=token+bucket&page=2&lang=en&sort=desc';
      expect(isCacheable(spec('fetch_page'), 'fetch_page', { url: plain })).toBe(true);
    });

    it('caches a GET http_request with ordinary headers', () => {
      const headers = { Accept: 'text/html', 'User-Agent': 'td', 'Cache-Control': 'no-cache' };
      expect(isCacheable(spec('http_request'), 'http_request', { url, headers })).toBe(true);
    });
  });
});

describe('hasCredentials', () => {
  it('finds no credentials in a request without headers or user info', () => {
    expect(hasCredentials({ url })).toBe(false);
    expect(hasCredentials({ url, headers: {} })).toBe(false);
  });

  it('reads a URL it cannot parse as carrying none', () => {
    expect(hasCredentials({ url: 'not a url' })).toBe(false);
  });

  it('finds credentials in headers even when the URL cannot be parsed', () => {
    expect(hasCredentials({ url: 'not a url', headers: { Cookie: 'a=1' } })).toBe(true);
  });
});

describe('needsConfirmation', () => {
  it('asks by default for run_command, edit_file and non-GET http_request', () => {
    expect(needsConfirmation(spec('run_command'), 'run_command', { command: 'ls' })).toBe(true);
    expect(needsConfirmation(spec('edit_file'), 'edit_file', { path: 'a.txt', content: '' })).toBe(true);
    for (const method of ['POST', 'put', 'DELETE', 'patch'])
      expect(needsConfirmation(spec('http_request'), 'http_request', { url, method })).toBe(true);
  });

  it('does not ask for a GET http_request, with or without the method spelled out', () => {
    expect(needsConfirmation(spec('http_request'), 'http_request', { url })).toBe(false);
    expect(needsConfirmation(spec('http_request'), 'http_request', { url, method: 'get' })).toBe(false);
  });

  it('asks for a tool whose definition sets confirm', () => {
    const pay = resolveSpec(
      { name: 'api_pay', description: '', parameters: { type: 'object' }, confirm: true },
      'user',
    );
    expect(needsConfirmation(pay, 'api_pay', {})).toBe(true);
  });

  it('does not ask for read-only built-ins, tools without confirm, or a tool with no definition', () => {
    for (const name of ['read_files', 'find_files', 'fetch_page', 'search_web', 'calculate'])
      expect(needsConfirmation(spec(name), name, {})).toBe(false);
    const plain = resolveSpec({ name: 'api_x', description: '', parameters: { type: 'object' } }, 'user');
    expect(needsConfirmation(plain, 'api_x', {})).toBe(false);
    expect(needsConfirmation(undefined, 'run_command', { command: 'ls' })).toBe(false);
  });
});
