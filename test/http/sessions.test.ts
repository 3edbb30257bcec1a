import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { direct, fetchSchemas, type Harness, putSession, round, rt, startHarness, uid } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

function expectErrorBody(r: { status: number; json: unknown; text: string }, status: number, code?: string) {
  expect(r.status, r.text).toBe(status);
  const body = r.json as { error?: { code?: unknown; message?: unknown } };
  expect(typeof body?.error?.code, r.text).toBe('string');
  expect(typeof body?.error?.message, r.text).toBe('string');
  if (code) expect(body.error?.code).toBe(code);
}

describe('PUT /v1/sessions/{session}', () => {
  it('creates a session and answers it, with its workspace under TD_WORKSPACE_ROOT/default/<session>', async () => {
    const s = uid('s');
    const r = await h.api('PUT', `/v1/sessions/${s}`, { provider: 'openai' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ id: s, provider: 'openai', tenant: 'default' });
    expect(r.json.workspace).toBe(path.join(h.workspaceRoot, 'default', s));
    expect(existsSync(r.json.workspace)).toBe(true);
  });

  it('puts a tenant’s sessions under the tenant’s directory', async () => {
    const s = uid('s');
    const r = await h.api('PUT', `/v1/sessions/${s}`, { provider: 'anthropic', tenant: 'acme' });
    expect(r.status).toBe(200);
    expect(r.json.workspace).toBe(path.join(h.workspaceRoot, 'acme', s));
  });

  it('updates an existing session', async () => {
    const s = uid('s');
    await putSession(h, s, { provider: 'openai' });
    const r = await h.api('PUT', `/v1/sessions/${s}`, { provider: 'claude-code', autoApprove: 'all' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ provider: 'claude-code', autoApprove: 'all' });
    expect((await h.api('GET', `/v1/sessions/${s}`)).json.provider).toBe('claude-code');
  });

  it('accepts a 128-character id and refuses a 129-character one', async () => {
    const ok = `a${uid('x')}`.padEnd(128, 'a');
    expect((await h.api('PUT', `/v1/sessions/${ok}`, { provider: 'openai' })).status).toBe(200);
    expectErrorBody(await h.api('PUT', `/v1/sessions/${ok}b`, { provider: 'openai' }), 400, 'invalid_id');
  });

  it.each([
    ['a session id with a space', `/v1/sessions/${encodeURIComponent('has space')}`, { provider: 'openai' }],
    ['a session id starting with a dot', '/v1/sessions/.hidden', { provider: 'openai' }],
    ['a 200-character session id', `/v1/sessions/${'s'.repeat(200)}`, { provider: 'openai' }],
    ['a 5000-character session id', `/v1/sessions/${'s'.repeat(5000)}`, { provider: 'openai' }],
    ['a body without provider', null, {}],
    ['a provider that is not a string', null, { provider: 7 }],
    ['a tenant that is not an id', null, { provider: 'openai', tenant: '../etc' }],
    ['autoApprove that is neither "all" nor names', null, { provider: 'openai', autoApprove: true }],
    ['clientTools that are not definitions', null, { provider: 'openai', clientTools: [{ name: 'x' }] }],
    ['a body that is not JSON', null, '{"provider":'],
    ['a body that is a JSON array', null, [{ provider: 'openai' }]],
  ])('answers 400 for %s and creates nothing', async (_what, p, body) => {
    const s = uid('never');
    const r = await h.api('PUT', p ?? `/v1/sessions/${s}`, body);
    expectErrorBody(r, 400);
    if (!p) expect((await h.api('GET', `/v1/sessions/${s}`)).status).toBe(404);
  });

  it('answers 404 with an error body when reading a session that does not exist', async () => {
    expectErrorBody(await h.api('GET', `/v1/sessions/${uid('none')}`), 404, 'session_not_found');
  });
});

describe('GET /v1/sessions/{session}/tools', () => {
  it('answers the neutral tools array and the turn-context text', async () => {
    const s = uid('s');
    await putSession(h, s, { provider: 'openai' });
    const r = await h.api('GET', `/v1/sessions/${s}/tools`);
    expect(r.status).toBe(200);
    expect(r.json.tools.map((t: { name: string }) => t.name).sort()).toEqual(['find_tools', 'run_tool']);
    for (const t of r.json.tools) {
      expect(Object.keys(t).sort()).toEqual(['description', 'name', 'parameters']);
    }
    expect(typeof r.json.context).toBe('string');
    expect(r.json.context).toContain('calculate');
  });

  it('answers {type: "function", function} entries for format=openai', async () => {
    const s = uid('s');
    await putSession(h, s, { provider: 'openai' });
    const r = await h.api('GET', `/v1/sessions/${s}/tools?format=openai`);
    expect(r.status).toBe(200);
    for (const t of r.json.tools) {
      expect(t.type).toBe('function');
      expect(Object.keys(t.function).sort()).toEqual(['description', 'name', 'parameters']);
    }
  });

  it('answers flat {type: "function", name, description, parameters} entries for format=openai-responses', async () => {
    const s = uid('s');
    await putSession(h, s, { provider: 'openai' });
    const r = await h.api('GET', `/v1/sessions/${s}/tools?format=openai-responses`);
    expect(r.status).toBe(200);
    expect(r.json.tools.map((t: { name: string }) => t.name)).toEqual(['find_tools', 'run_tool']);
    for (const t of r.json.tools) {
      expect(Object.keys(t).sort()).toEqual(['description', 'name', 'parameters', 'type']);
      expect(t.type).toBe('function');
    }
  });

  it('answers {name, description, input_schema} entries for format=anthropic', async () => {
    const s = uid('s');
    await putSession(h, s, { provider: 'claude-code' });
    const r = await h.api('GET', `/v1/sessions/${s}/tools?format=anthropic`);
    expect(r.status).toBe(200);
    const byName = new Map(r.json.tools.map((t: { name: string }) => [t.name, t]));
    expect(byName.has('run_tool')).toBe(false);
    expect(byName.has('calculate')).toBe(true);
    for (const t of r.json.tools) {
      expect(Object.keys(t).sort()).toEqual(['description', 'input_schema', 'name']);
      expect(t.input_schema.type).toBe('object');
    }
  });

  it('lists client tools in the tools array', async () => {
    const s = uid('s');
    const clientTool = {
      name: 'ask_person',
      description: 'Ask the user a question.',
      parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
    };
    await putSession(h, s, { provider: 'openai', clientTools: [clientTool] });
    const r = await h.api('GET', `/v1/sessions/${s}/tools`);
    expect(r.json.tools).toContainEqual(clientTool);
  });

  it('answers 404 for an unknown session and 400 for an unknown format', async () => {
    expectErrorBody(await h.api('GET', `/v1/sessions/${uid('none')}/tools`), 404, 'session_not_found');
    const s = uid('s');
    await putSession(h, s);
    expectErrorBody(await h.api('GET', `/v1/sessions/${s}/tools?format=gemini`), 400);
  });
});

describe('GET /v1/sessions/{session}/history', () => {
  it('answers every recorded result, oldest first, with round, run and at', async () => {
    const s = uid('s');
    await putSession(h, s);
    await fetchSchemas(h, s, ['calculate']);
    const a = rt('calculate', { expression: '1+1' });
    const b = direct('find_tools', { names: ['read_files'] });
    const c = rt('calculate', { expression: '2+2' });
    const runA = uid('run');
    const first = await round(h, s, runA, [a]);
    await round(h, s, uid('run'), [b, c]);
    const r = await h.api('GET', `/v1/sessions/${s}/history`);
    expect(r.status).toBe(200);
    const ids = r.json.results.map((e: { id: string }) => e.id);
    expect(ids.indexOf(a.id)).toBeLessThan(ids.indexOf(b.id));
    expect(ids.indexOf(b.id)).toBeLessThan(ids.indexOf(c.id));
    const entry = r.json.results[ids.indexOf(a.id)];
    expect(entry).toMatchObject({ id: a.id, name: 'calculate', status: 'ok', round: first.round, run: runA });
    expect(typeof entry.at).toBe('string');
  });

  it('answers one tool’s history for ?tool=', async () => {
    const s = uid('s');
    await putSession(h, s);
    await fetchSchemas(h, s, ['calculate']);
    await round(h, s, uid('run'), [rt('calculate', { expression: '3+3' }), direct('find_tools', { query: 'x' })]);
    const r = await h.api('GET', `/v1/sessions/${s}/history?tool=calculate`);
    expect(r.status).toBe(200);
    expect(r.json.results.length).toBeGreaterThan(0);
    expect(r.json.results.every((e: { name: string }) => e.name === 'calculate')).toBe(true);
  });

  it('answers 404 for an unknown session and 400 for an empty tool filter', async () => {
    expectErrorBody(await h.api('GET', `/v1/sessions/${uid('none')}/history`), 404, 'session_not_found');
    const s = uid('s');
    await putSession(h, s);
    expectErrorBody(await h.api('GET', `/v1/sessions/${s}/history?tool=`), 400);
  });
});

describe('GET /v1/tools', () => {
  it('answers the catalog with every flag of each entry', async () => {
    const r = await h.api('GET', '/v1/tools');
    expect(r.status).toBe(200);
    const byName = new Map(r.json.tools.map((t: { name: string }) => [t.name, t]));
    for (const n of ['find_tools', 'run_tool', 'read_files', 'edit_file', 'run_command', 'calculate', 'fetch_page']) {
      expect(byName.has(n), n).toBe(true);
    }
    for (const t of r.json.tools) {
      for (const k of ['name', 'description', 'concurrency', 'confirm', 'deferred', 'cacheable', 'parameters']) {
        expect(t, `${t.name} lacks ${k}`).toHaveProperty(k);
      }
    }
    expect(byName.get('run_command')).toMatchObject({ concurrency: 'serial', confirm: true, cacheable: false });
    expect(byName.get('fetch_page')).toMatchObject({ concurrency: 'concurrent', cacheable: true });
  });
});
