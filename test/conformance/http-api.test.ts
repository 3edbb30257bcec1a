import { describe, expect, it } from 'vitest';
import { type Answer, direct, rt, uid } from './api.js';
import { describeModes, useService } from './fixture.js';

const expectErrorBody = (r: Answer, status: number, what: string) => {
  expect(r.status, `${what}: ${r.text.slice(0, 200)}`).toBe(status);
  expect(typeof r.json?.error?.code, what).toBe('string');
  expect(r.json.error.code.length, what).toBeGreaterThan(0);
  expect(typeof r.json?.error?.message, what).toBe('string');
  expect(r.json.error.message.length, what).toBeGreaterThan(0);
};

/** Sample value of a metric line, or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

// API.md "HTTP API" (ids, errors, limits, catalog) and "Operations".
describeModes('HTTP API and operations', (mode) => {
  const f = useService(mode);

  describe('requests the API rejects', () => {
    it('answers 400 or 404 with an error body, and a rejected request changes no state', async () => {
      const s = await f.api.session(['calculate']);
      const historyBefore = await f.api.history(s);
      const rounds = `/v1/sessions/${s}/runs/${uid('run')}/rounds`;
      const cases: Array<[string, string, unknown, number, string]> = [
        ['POST', rounds, 'not json', 400, 'a body that is not JSON'],
        ['POST', rounds, {}, 400, 'a body without calls'],
        ['POST', rounds, { calls: 'nope' }, 400, 'calls that is not an array'],
        ['POST', rounds, { calls: [1] }, 400, 'a call that is not an object'],
        ['POST', rounds, { calls: [{ id: 'bad id', name: 'find_tools', args: {} }] }, 400, 'a call id with a space'],
        ['POST', `${rounds}?format=xml`, { calls: [] }, 400, 'an unknown format'],
        ['POST', `/v1/sessions/${s}/runs/bad%20run/rounds`, { calls: [] }, 400, 'a run id with a space'],
        ['POST', `/v1/sessions/${s}/runs/${'r'.repeat(129)}/rounds`, { calls: [] }, 400, 'a 129-character run id'],
        ['POST', `/v1/sessions/${s}/runs/-starts-with-dash/rounds`, { calls: [] }, 400, 'an id starting with -'],
        ['PUT', '/v1/sessions/has%20space', { provider: 'openai' }, 400, 'a session id with a space'],
        ['PUT', `/v1/sessions/${'s'.repeat(129)}`, { provider: 'openai' }, 400, 'a 129-character session id'],
        ['PUT', `/v1/sessions/${uid('s')}`, {}, 400, 'a session without provider'],
        ['PUT', `/v1/sessions/${uid('s')}`, { provider: 'openai', tenant: 'a b' }, 400, 'a tenant that is not an id'],
        ['PUT', `/v1/sessions/${uid('s')}`, { provider: 'openai', autoApprove: 'some' }, 400, 'a bad autoApprove'],
        ['GET', `/v1/sessions/${s}/history?tool=`, undefined, 400, 'an empty tool filter'],
        ['GET', `/v1/sessions/${uid('never')}/history`, undefined, 404, 'history of an unknown session'],
        ['GET', `/v1/sessions/${uid('never')}/confirmations`, undefined, 404, 'confirmations of an unknown session'],
        [
          'POST',
          `/v1/sessions/${uid('never')}/runs/r/rounds`,
          { calls: [direct('find_tools', {})] },
          404,
          'a round of an unknown session',
        ],
      ];
      for (const [method, p, body, status, what] of cases) {
        expectErrorBody(await f.api.request(method, p, body), status, what);
      }
      expect(await f.api.history(s)).toEqual(historyBefore);
    });

    it('answers 400 for more calls than a round may hold, naming the limit', async () => {
      const s = await f.api.session(['calculate']);
      const calls = Array.from({ length: 129 }, () => rt('calculate', { expression: '1' }));
      const r = await f.api.postRound(s, uid('run'), calls);
      expectErrorBody(r, 400, '129 calls');
      expect(r.json.error.message).toMatch(/128/);
      expect(await f.api.history(s)).toHaveLength(1);
    });

    it('answers 413 for a body over the size limit', async () => {
      const s = await f.api.session(['calculate']);
      const big = 'x'.repeat(5 * 1024 * 1024);
      const r = await f.api.postRound(s, uid('run'), [rt('calculate', { expression: big })]);
      expectErrorBody(r, 413, 'a 5 MB body');
      expect(await f.api.history(s)).toHaveLength(1);
    });

    it('accepts ids of 128 characters with . _ : and -', async () => {
      const s = `a.b_c:d-${'e'.repeat(120)}`;
      expect(s).toHaveLength(128);
      await f.api.putSession(s, { provider: 'openai' });
      const b = await f.api.round(s, `r.u_n:1-${'x'.repeat(120)}`, [
        direct('find_tools', { names: ['calculate'] }, 'c.1_x:y-z'),
      ]);
      expect(b.results[0]?.status).toBe('ok');
    });
  });

  describe('PUT /v1/sessions/{session}', () => {
    it('answers 200 with the session, and updates it when PUT again', async () => {
      const s = uid('s');
      const first = await f.api.request('PUT', `/v1/sessions/${s}`, { provider: 'openai', tenant: 'acme' });
      expect(first.status).toBe(200);
      expect(first.json).toMatchObject({ provider: 'openai', tenant: 'acme' });
      const second = await f.api.request('PUT', `/v1/sessions/${s}`, { provider: 'claude-code', tenant: 'acme' });
      expect(second.json).toMatchObject({ provider: 'claude-code' });
      const tools = await f.api.request('GET', `/v1/sessions/${s}/tools`);
      expect(tools.json.tools.map((t: { name: string }) => t.name)).not.toContain('run_tool');
    });
  });

  describe('GET /v1/tools', () => {
    it('lists the catalog with every field, and the classes and flags API.md gives the built-ins', async () => {
      const r = await f.api.request('GET', '/v1/tools');
      expect(r.status).toBe(200);
      const byName = new Map<string, Record<string, unknown>>(
        r.json.tools.map((t: Record<string, unknown>) => [t.name, t]),
      );
      for (const t of byName.values()) {
        expect(Object.keys(t)).toEqual(
          expect.arrayContaining([
            'name',
            'description',
            'concurrency',
            'confirm',
            'deferred',
            'cacheable',
            'parameters',
          ]),
        );
      }
      const concurrent = [
        'find_tools',
        'read_files',
        'find_files',
        'http_request',
        'fetch_page',
        'search_web',
        'calculate',
        'write_todo',
      ];
      for (const n of concurrent) expect(byName.get(n)?.concurrency, n).toBe('concurrent');
      for (const n of ['edit_file', 'run_command'])
        expect(byName.get(n)).toMatchObject({ concurrency: 'serial', confirm: true });
      expect(byName.get('http_request')?.confirm).toBe(true);
      for (const n of ['calculate', 'read_files', 'find_files', 'fetch_page', 'search_web', 'write_todo', 'find_tools'])
        expect(byName.get(n)?.confirm, n).toBe(false);
      for (const n of ['fetch_page', 'search_web', 'http_request']) expect(byName.get(n)?.cacheable, n).toBe(true);
      for (const n of ['calculate', 'run_command', 'edit_file', 'read_files'])
        expect(byName.get(n)?.cacheable, n).toBe(false);
      for (const n of ['find_tools', 'run_tool']) expect(byName.get(n)?.deferred, n).toBe(false);
      for (const n of ['calculate', 'read_files', 'run_command']) expect(byName.get(n)?.deferred, n).toBe(true);
    });
  });

  describe('operations', () => {
    it('answers /healthz and /readyz 200', async () => {
      expect((await f.api.request('GET', '/healthz')).status).toBe(200);
      expect((await f.api.request('GET', '/readyz')).status).toBe(200);
    });

    it('counts every call in td_calls_total{tool,status}, whatever its status', async () => {
      const s = await f.api.session(['calculate']);
      const before = await f.api.request('GET', '/metrics');
      expect(before.status).toBe(200);
      expect(before.headers.get('content-type')).toMatch(/^text\/plain/);
      const count = (text: string, status: string) =>
        sample(text, 'td_calls_total', { tool: 'calculate', status }) ?? 0;
      await f.api.round(s, uid('run'), [
        rt('calculate', { expression: '1' }),
        rt('calculate', { expression: 5 }),
        direct('calculate', { expression: '1' }),
      ]);
      const after = (await f.api.request('GET', '/metrics')).text;
      expect(count(after, 'ok') - count(before.text, 'ok')).toBe(1);
      expect(count(after, 'invalid') - count(before.text, 'invalid')).toBe(1);
      expect(count(after, 'refused') - count(before.text, 'refused')).toBe(1);
      for (const name of ['td_rounds_in_progress', 'td_call_duration_seconds_count', 'td_dedupe_hits_total']) {
        expect(after, name).toMatch(new RegExp(`^${name}`, 'm'));
      }
    });

    it(
      mode !== 'embedded'
        ? 'reports the two live workers in td_workers_alive and serves the queue dashboard'
        : 'serves no queue dashboard in embedded mode (there are no queues)',
      async () => {
        const metrics = (await f.api.request('GET', '/metrics')).text;
        const dashboard = await f.api.request('GET', '/admin/queues');
        if (mode !== 'embedded') {
          expect(sample(metrics, 'td_workers_alive')).toBe(2);
          expect(dashboard.status).toBe(200);
        } else {
          expect(dashboard.status).toBe(404);
        }
      },
    );
  });
});
