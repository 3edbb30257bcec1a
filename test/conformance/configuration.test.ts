import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Api, rt, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';

const TOKEN = 'conformance-secret-token';
const CONFIRM_TIMEOUT_MS = 1500;

// API.md "Configuration": a service started with settings other than the defaults. Every request
// of this file carries the bearer token.
describeModes('configuration from the environment', (mode) => {
  const f = useService(mode, {
    token: TOKEN,
    env: {
      TD_API_TOKEN: TOKEN,
      TD_CONFIRM_TIMEOUT_MS: String(CONFIRM_TIMEOUT_MS),
      MAX_CONCURRENT_TOOLS: '2',
      TD_SEARCH_URL: undefined,
    },
    envFor: ({ target }) => ({ TD_HTTP_ALLOW: `localhost:${target.port}` }),
  });
  const TOOLS = ['run_command', 'http_request', 'search_web', 'calculate'];

  describe('TD_API_TOKEN', () => {
    it('answers 401 with an error body to /v1 requests without the bearer token, and changes nothing', async () => {
      const anonymous = new Api(f.service.base);
      const wrong = new Api(f.service.base, 'not-the-token');
      const s = uid('s');
      for (const api of [anonymous, wrong]) {
        for (const [method, p, body] of [
          ['PUT', `/v1/sessions/${s}`, { provider: 'openai' }],
          ['GET', '/v1/tools', undefined],
          ['POST', `/v1/sessions/${s}/runs/r/rounds`, { calls: [] }],
          ['GET', `/v1/sessions/${s}/events`, undefined],
        ] as const) {
          const r = await api.request(method, p, body);
          expect(r.status, `${method} ${p}`).toBe(401);
          expect(typeof r.json?.error?.code).toBe('string');
          expect(typeof r.json?.error?.message).toBe('string');
        }
      }
      expect(existsSync(f.service.workspace(s))).toBe(false);
      expect((await f.api.request('GET', `/v1/sessions/${s}/history`)).status).toBe(404);
    });

    it('serves /v1 with the token, and /healthz, /readyz and /metrics without it', async () => {
      expect((await f.api.request('GET', '/v1/tools')).status).toBe(200);
      const anonymous = new Api(f.service.base);
      for (const p of ['/healthz', '/readyz', '/metrics']) expect((await anonymous.request('GET', p)).status).toBe(200);
    });
  });

  describe('TD_CONFIRM_TIMEOUT_MS', () => {
    it('ends a confirmation nobody answers denied once the timeout passes, and forgets it', async () => {
      const s = await f.api.session(TOOLS);
      const run = uid('run');
      const started = Date.now();
      const pending = f.api.round(s, run, [rt('run_command', { command: 'touch late.txt' })]);
      const [c] = await f.api.waitPending(s, 1);
      const [r] = (await pending).results;
      const waited = Date.now() - started;
      expect(r).toMatchObject({ status: 'denied', error: { code: 'denied' } });
      expect(waited).toBeGreaterThanOrEqual(CONFIRM_TIMEOUT_MS - 100);
      expect(waited).toBeLessThan(CONFIRM_TIMEOUT_MS + 8_000);
      expect(await f.api.pending(s)).toEqual([]);
      expect((await f.api.answer(s, c?.confirmationId ?? '', { approve: true })).status).toBe(404);
      expect(existsSync(`${f.service.workspace(s)}/late.txt`)).toBe(false);
    });
  });

  describe('MAX_CONCURRENT_TOOLS', () => {
    it('limits the concurrent calls of a run in flight to its value', async () => {
      const s = await f.api.session(TOOLS);
      const tag = tagOf('limit2');
      const calls = Array.from({ length: 6 }, (_, i) =>
        rt('http_request', { url: `http://localhost:${f.target.port}/slow/${tag}/${i}?ms=250` }),
      );
      const b = await f.api.round(s, uid('run'), calls);
      expect(b.results.every((r) => r.status === 'ok')).toBe(true);
      expect(f.target.tag(tag).hits).toBe(6);
      expect(f.target.tag(tag).maxInFlight).toBe(2);
    });
  });

  describe('TD_HTTP_ALLOW', () => {
    it('matches the URL’s host as written: localhost:<port> is allowed, 127.0.0.1:<port> is not', async () => {
      const s = await f.api.session(TOOLS);
      const tag = tagOf('written');
      const b = await f.api.round(s, uid('run'), [
        rt('http_request', { url: `http://localhost:${f.target.port}/echo/${tag}/0` }),
        rt('http_request', { url: `http://127.0.0.1:${f.target.port}/echo/${tag}/1` }),
        rt('http_request', { url: `http://localhost:${f.canary.port}/echo/${tag}/2` }),
      ]);
      expect(b.results.map((r) => r.status)).toEqual(['ok', 'error', 'error']);
      expect(f.target.tag(tag).requests.map((q) => q.path)).toEqual([`/echo/${tag}/0`]);
      expect(f.canary.requests).toEqual([]);
    });
  });

  describe('TD_SEARCH_URL', () => {
    it('makes search_web end error/handler_error saying it is not configured when unset', async () => {
      const s = await f.api.session(TOOLS);
      const r = await f.api.one(s, rt('search_web', { query: 'anything' }));
      expect(r).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
      expect(r.error?.message).toMatch(/not configured/);
    });
  });
});
