import { Validator } from '@seriousme/openapi-schema-validator';
import { ID_PATTERN } from '@tool-dispatch/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { direct, fetchSchemas, type Harness, putSession, rt, sleep, startHarness, tapEvents, uid } from './harness.js';
import {
  answerProblems,
  DocumentSchemas,
  operationsOf,
  readOpenApiDocument,
  requestProblems,
  routeShape,
  servedRoutes,
} from './openapi-doc.js';

const doc = readOpenApiDocument();
const schemas = new DocumentSchemas(doc);

/**
 * Documented (API.md v1.1, parked calls) but served only once the parked-calls work is merged;
 * while a route here is not served the check that every documented route exists skips it.
 */
const NOT_YET_SERVED = new Set<string>([]);

describe('docs/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document (the OAI schema, through @seriousme/openapi-schema-validator)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('holds only schemas that compile as JSON Schema 2020-12 in ajv strict mode', () => {
    for (const name of Object.keys(doc.components.schemas)) {
      expect(() => schemas.component(name), name).not.toThrow();
    }
  });

  it('declares every {parameter} of a path template as a required path parameter, and no others', () => {
    for (const [method, path, op] of operationsOf(doc)) {
      const declared = [...(doc.paths[path]?.parameters ?? []), ...(op.parameters ?? [])]
        .map((p) => doc.components.parameters[p.$ref.replace('#/components/parameters/', '')])
        .filter((p) => p?.in === 'path');
      const inTemplate = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      expect(declared.map((p) => p?.name).sort(), `${method} ${path}`).toEqual(inTemplate.sort());
      for (const p of declared) expect(p?.required, `${method} ${path} ${p?.name}`).toBe(true);
    }
  });

  it('spells the id pattern as @tool-dispatch/shared does', () => {
    expect((doc.components.schemas.Id as { pattern: string }).pattern).toBe(ID_PATTERN.source);
  });
});

describe('GET /openapi.json', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ server: { apiToken: 'openapi-test-token-0123456789' } });
  });
  afterAll(() => h.close());

  it('answers docs/openapi.json as application/json without a token when TD_API_TOKEN is set', async () => {
    const r = await h.api('GET', '/openapi.json');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(r.json).toEqual(doc);
  });

  it('asks for the bearer token exactly where the document applies the security scheme', async () => {
    for (const [method, path, op] of operationsOf(doc)) {
      const url = path.replace(/\{[^}]+\}/g, 'x1');
      const r = await h.api(method, url, method === 'GET' || method === 'DELETE' ? undefined : {});
      const isOpen = Array.isArray(op.security) && op.security.length === 0;
      if (isOpen) {
        expect(r.status, `${method} ${path}`).not.toBe(401);
      } else {
        expect(r.status, `${method} ${path}`).toBe(401);
        expect(r.headers.get('www-authenticate')).toBe('Bearer');
        expect(answerProblems(schemas, { method, url }, r)).toEqual([]);
      }
    }
  });
});

describe('the document and the server', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it('documents every route the server registers', () => {
    const served = servedRoutes(h.app);
    // The parser itself works: it finds the routes of every group.
    expect(served).toContainEqual({ method: 'POST', path: '/v1/sessions/:session/runs/:run/rounds' });
    expect(served).toContainEqual({ method: 'GET', path: '/openapi.json' });
    const documented = new Set(operationsOf(doc).map(([method, path]) => `${method} ${routeShape(path)}`));
    // The inbox's login, assets and page API under /inbox/ serve its page (documented as GET /inbox), as
    // the dashboard's live under /admin/queues/: not part of the contract.
    const missing = served
      .filter((r) => !r.path.startsWith('/inbox/'))
      .map((r) => `${r.method} ${routeShape(r.path)}`)
      .filter((r) => !documented.has(r));
    expect(missing).toEqual([]);
  });

  it('serves every documented route (the dashboard only in distributed mode)', () => {
    const served = new Set(servedRoutes(h.app).map((r) => `${r.method} ${routeShape(r.path)}`));
    const absent = operationsOf(doc)
      .filter(([, , op]) => op['x-td-mode'] !== 'distributed')
      .map(([method, path]) => `${method} ${routeShape(path)}`)
      .filter((route) => !served.has(route) && !NOT_YET_SERVED.has(route));
    expect(absent).toEqual([]);
  });

  it('lists every format value the server accepts, and the server accepts each', async () => {
    const s = uid('s');
    await putSession(h, s);
    const format = doc.components.parameters.format?.schema as { enum: string[] };
    for (const value of format.enum) {
      expect((await h.api('GET', `/v1/sessions/${s}/tools?format=${value}`)).status, value).toBe(200);
    }
    expect((await h.api('GET', `/v1/sessions/${s}/tools?format=xml`)).status).toBe(400);
  });
});

describe('real answers match the document', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  /** Sends a request, checks the answer (and, when asked, the request body) against the document. */
  async function call(
    method: string,
    url: string,
    options: { body?: unknown; headers?: Record<string, string>; validBody?: boolean } = {},
  ) {
    if (options.validBody) expect(requestProblems(schemas, { method, url, body: options.body })).toEqual([]);
    const r = await h.api(method, url, options.body, options.headers);
    expect(answerProblems(schemas, { method, url }, r), r.text).toEqual([]);
    return r;
  }

  const statusesOf = (b: { results: Array<{ status: string }> }) => b.results.map((r) => r.status);

  async function openAiSession() {
    const s = uid('s');
    await putSession(h, s);
    await fetchSchemas(h, s, ['calculate', 'read_files']);
    return s;
  }

  it('PUT and GET a session', async () => {
    const s = uid('s');
    const body = {
      provider: 'anthropic',
      tenant: 'acme',
      autoApprove: ['calculate'],
      clientTools: [{ name: 'ask_person', description: 'Ask.', parameters: { type: 'object' }, concurrency: 'serial' }],
    };
    expect((await call('PUT', `/v1/sessions/${s}`, { body, validBody: true })).status).toBe(200);
    expect((await call('PUT', `/v1/sessions/${s}`, { body: { provider: 'openai' }, validBody: true })).status).toBe(
      200,
    );
    expect((await call('GET', `/v1/sessions/${s}`)).json.provider).toBe('openai');
  });

  it('GET tools in each format, each entry in its format’s shape', async () => {
    const s = await openAiSession();
    const shapes = {
      '': 'NeutralTool',
      '?format=openai': 'OpenAiTool',
      '?format=openai-responses': 'OpenAiResponsesTool',
      '?format=anthropic': 'AnthropicTool',
    };
    for (const [query, shape] of Object.entries(shapes)) {
      const r = await call('GET', `/v1/sessions/${s}/tools${query}`);
      const validate = schemas.component(shape);
      for (const tool of r.json.tools) expect(validate(tool), `${shape}: ${schemas.errorsOf(validate)}`).toBe(true);
    }
    const cc = uid('s');
    await putSession(h, cc, { provider: 'claude-code' });
    await call('GET', `/v1/sessions/${cc}/tools?format=anthropic`);
  });

  it('POST a round of native calls: ok, deduped, schema, invalid, unknown, refused, error', async () => {
    const s = await openAiSession();
    const body = {
      calls: [
        rt('calculate', { expression: '2+3' }),
        rt('calculate', { expression: '2+3' }),
        rt('find_files', { pattern: '*' }),
        rt('calculate', { expression: 5 }),
        rt('no_such_tool', {}),
        direct('calculate', { expression: '1' }),
        rt('read_files', { paths: ['../outside.txt'] }),
      ],
    };
    const r = await call('POST', `/v1/sessions/${s}/runs/${uid('run')}/rounds`, { body, validBody: true });
    expect(statusesOf(r.json)).toEqual(['ok', 'deduped', 'schema', 'invalid', 'unknown', 'refused', 'error']);
  });

  it('POST a round of OpenAI calls with format=openai', async () => {
    const s = await openAiSession();
    const fn = (name: string, args: string) => ({
      id: uid('call'),
      type: 'function',
      function: { name, arguments: args },
    });
    const body = {
      calls: [
        fn('run_tool', JSON.stringify({ name: 'calculate', args: { expression: '6*7' } })),
        fn('run_tool', JSON.stringify({ name: 'find_files', args: { pattern: '*' } })),
        fn('run_tool', '{not json'),
      ],
    };
    const r = await call('POST', `/v1/sessions/${s}/runs/${uid('run')}/rounds?format=openai`, {
      body,
      validBody: true,
    });
    expect(statusesOf(r.json)).toEqual(['ok', 'schema', 'invalid']);
    expect(schemas.component('OpenAiRoundResponse')(r.json)).toBe(true);
  });

  it('POST a round of Anthropic calls with format=anthropic', async () => {
    const s = await openAiSession();
    const use = (name: string, input: unknown) => ({ type: 'tool_use', id: uid('toolu'), name, input });
    const body = {
      calls: [
        use('run_tool', { name: 'calculate', args: { expression: '1+1' } }),
        use('calculate', { expression: '1+1' }),
        use('run_tool', { name: 'nothing_like_it', args: {} }),
      ],
    };
    const r = await call('POST', `/v1/sessions/${s}/runs/${uid('run')}/rounds?format=anthropic`, {
      body,
      validBody: true,
    });
    expect(statusesOf(r.json)).toEqual(['ok', 'refused', 'unknown']);
    expect(schemas.component('AnthropicRoundResponse')(r.json)).toBe(true);
  });

  it('POST a round of OpenAI Responses calls with format=openai-responses', async () => {
    const s = await openAiSession();
    const item = (name: string, args: unknown) => ({
      type: 'function_call',
      id: uid('fc'),
      call_id: uid('call'),
      name,
      arguments: JSON.stringify(args),
    });
    const body = {
      calls: [
        item('run_tool', { name: 'calculate', args: { expression: '3*3' } }),
        item('run_tool', { name: 'calculate', args: { expression: [] } }),
      ],
    };
    const url = `/v1/sessions/${s}/runs/${uid('run')}/rounds?format=openai-responses`;
    const r = await call('POST', url, { body, validBody: true });
    expect(statusesOf(r.json)).toEqual(['ok', 'invalid']);
    expect(schemas.component('OpenAiResponsesRoundResponse')(r.json)).toBe(true);
  });

  it('history, whole and of one tool', async () => {
    const s = await openAiSession();
    await call('POST', `/v1/sessions/${s}/runs/${uid('run')}/rounds`, {
      body: { calls: [rt('calculate', { expression: '1' }), rt('calculate', { expression: 'x' })] },
    });
    expect((await call('GET', `/v1/sessions/${s}/history`)).json.results.length).toBeGreaterThanOrEqual(3);
    await call('GET', `/v1/sessions/${s}/history?tool=calculate`);
  });

  it('confirmations listed and answered, events of the round, and a cancel', async () => {
    const s = uid('s');
    await putSession(h, s);
    await fetchSchemas(h, s, ['run_command']);
    const tap = await tapEvents(h, s);
    expect(
      answerProblems(schemas, { method: 'GET', url: `/v1/sessions/${s}/events` }, { ...tap, json: undefined }),
    ).toEqual([]);
    try {
      const run = uid('run');
      const body = { calls: [rt('run_command', { command: 'echo hi' }), rt('run_command', { command: 'echo no' })] };
      const pending = call('POST', `/v1/sessions/${s}/runs/${run}/rounds`, { body, validBody: true });
      const listed = await waitForConfirmations(s, 2);
      const [first, second] = listed.json.confirmations;
      const approve = { approve: true };
      await call('POST', `/v1/sessions/${s}/confirmations/${first.confirmationId}`, { body: approve, validBody: true });
      const deny = { approve: false, remember: true };
      await call('POST', `/v1/sessions/${s}/confirmations/${second.callId}`, { body: deny, validBody: true });
      expect(statusesOf((await pending).json)).toEqual(['ok', 'denied']);

      const cancelled = uid('run');
      const waiting = call('POST', `/v1/sessions/${s}/runs/${cancelled}/rounds`, {
        body: { calls: [rt('run_command', { command: 'echo never' })] },
      });
      await waitForConfirmations(s, 1);
      expect((await call('DELETE', `/v1/sessions/${s}/runs/${cancelled}`)).json).toEqual({ cancelled: 1 });
      expect((await waiting).json.results[0].error.code).toBe('cancelled');

      const events = doc.paths['/v1/sessions/{session}/events']?.get as {
        responses: { 200: { content: { 'text/event-stream': { 'x-td-events': Record<string, unknown> } } } };
      };
      const eventSchemas = events.responses[200].content['text/event-stream']['x-td-events'];
      await tap.waitFor((seen) => seen.filter((e) => e.name === 'round.completed').length >= 2);
      expect(new Set(tap.events.map((e) => e.name))).toEqual(
        new Set(['round.started', 'confirm.requested', 'tool.result', 'round.completed']),
      );
      for (const event of tap.events) {
        expect(Object.keys(eventSchemas)).toContain(event.name);
        const validate = schemas.at([
          'paths',
          '/v1/sessions/{session}/events',
          'get',
          'responses',
          '200',
          'content',
          'text/event-stream',
          'x-td-events',
          event.name,
        ]);
        expect(validate(event.data), `${event.name}: ${schemas.errorsOf(validate)}`).toBe(true);
      }
    } finally {
      tap.close();
    }
  });

  it('parked calls listed and answered (output, error, 400, 404), and their input.requested', async () => {
    const s = uid('s');
    const lookup = { name: 'ui_lookup', description: 'Looks up on the client.', parameters: { type: 'object' } };
    await putSession(h, s, { provider: 'claude-code', clientTools: [lookup] });
    await fetchSchemas(h, s, ['ask_user']);
    const tap = await tapEvents(h, s);
    try {
      const body = {
        calls: [direct('ask_user', { question: 'Which?', choices: ['a', 'b'] }), direct('ui_lookup', { q: 1 })],
      };
      const pending = call('POST', `/v1/sessions/${s}/runs/${uid('run')}/rounds`, { body, validBody: true });
      const [ask] = (await waitForInputs(s)).json.inputs;
      expect((await call('POST', `/v1/sessions/${s}/inputs/${ask.inputId}`, { body: { output: 'c' } })).status).toBe(
        400,
      );
      expect((await call('POST', `/v1/sessions/${s}/inputs/${ask.inputId}`, { body: {} })).status).toBe(400);
      const answer = { output: 'a' };
      await call('POST', `/v1/sessions/${s}/inputs/${ask.inputId}`, { body: answer, validBody: true });
      const [client] = (await waitForInputs(s)).json.inputs;
      const failure = { error: 'the client is offline' };
      await call('POST', `/v1/sessions/${s}/inputs/${client.callId}`, { body: failure, validBody: true });
      expect(statusesOf((await pending).json)).toEqual(['ok', 'error']);
      const gone = await call('POST', `/v1/sessions/${s}/inputs/${client.inputId}`, { body: answer });
      expect(gone.json.error.code).toBe('input_not_found');
      await tap.waitFor((seen) => seen.some((e) => e.name === 'round.completed'));
      const requested = tap.events.filter((e) => e.name === 'input.requested');
      expect(requested).toHaveLength(2);
      const validate = schemas.at([
        'paths',
        '/v1/sessions/{session}/events',
        'get',
        'responses',
        '200',
        'content',
        'text/event-stream',
        'x-td-events',
        'input.requested',
      ]);
      for (const e of requested) expect(validate(e.data), schemas.errorsOf(validate)).toBe(true);
    } finally {
      tap.close();
    }
  });

  async function waitForInputs(s: string) {
    for (let i = 0; i < 250; i++) {
      const r = await call('GET', `/v1/sessions/${s}/inputs`);
      if (r.json.inputs.length >= 1) return r;
      await sleep(20);
    }
    throw new Error('no parked call');
  }

  async function waitForConfirmations(s: string, n: number) {
    for (let i = 0; i < 250; i++) {
      const r = await call('GET', `/v1/sessions/${s}/confirmations`);
      if (r.json.confirmations.length >= n) return r;
      await sleep(20);
    }
    throw new Error(`fewer than ${n} pending confirmations`);
  }

  it('(v1.3) a round handed over: POST 202 with Location, GET 202 with each call’s state, 200 in every format, 404 and 400', async () => {
    const s = uid('s');
    await putSession(h, s);
    await fetchSchemas(h, s, ['run_command', 'calculate']);
    const run = uid('run');
    const body = { calls: [rt('run_command', { command: 'echo later' }), rt('calculate', { expression: '1+1' })] };
    const headers = { prefer: 'respond-async', 'idempotency-key': uid('k') };
    const posted = await call('POST', `/v1/sessions/${s}/runs/${run}/rounds`, { body, headers, validBody: true });
    expect(posted.status).toBe(202);
    const where = `/v1/sessions/${s}/runs/${run}/rounds/${posted.json.round}`;
    expect(posted.headers.get('location')).toBe(where);
    const listed = await waitForConfirmations(s, 1);
    const running = await call('GET', where);
    expect(running.status).toBe(202);
    expect(running.json.calls.map((c: { state: string }) => c.state)).toEqual(['waiting_for_approval', 'queued']);
    expect((await call('POST', `/v1/sessions/${s}/runs/${run}/rounds`, { body, headers })).status).toBe(202);
    await call('POST', `/v1/sessions/${s}/confirmations/${listed.json.confirmations[0].confirmationId}`, {
      body: { approve: true },
    });
    expect((await call('GET', `${where}?wait=60000`)).status).toBe(200);
    for (const format of ['openai', 'anthropic', 'openai-responses'])
      expect((await call('GET', `${where}?format=${format}`)).status, format).toBe(200);
    expect((await call('POST', `/v1/sessions/${s}/runs/${run}/rounds`, { body, headers })).status).toBe(200);
    expect((await call('GET', `/v1/sessions/${s}/runs/${run}/rounds/rnd_nope`)).status).toBe(404);
    expect((await call('GET', `${where}?wait=soon`)).status).toBe(400);
  });

  it('the catalog and the operations endpoints', async () => {
    await call('GET', '/v1/tools');
    await call('GET', '/healthz');
    await call('GET', '/readyz');
    await call('GET', '/metrics');
    await call('GET', '/openapi.json');
  });

  it('400s, 404s, a 409 and a 413, each in the documented error body', async () => {
    const s = await openAiSession();
    const rounds = `/v1/sessions/${s}/runs/${uid('run')}/rounds`;
    expect((await call('PUT', `/v1/sessions/${s}`, { body: { provider: 7 } })).json.error.code).toBe('invalid_request');
    expect((await call('PUT', '/v1/sessions/bad%20id', { body: { provider: 'openai' } })).json.error.code).toBe(
      'invalid_id',
    );
    expect((await call('POST', rounds, { body: '{"calls": [' })).json.error.code).toBe('invalid_json');
    expect((await call('POST', rounds, { body: { calls: 'none' } })).status).toBe(400);
    expect((await call('GET', `/v1/sessions/${s}/tools?format=xml`)).status).toBe(400);
    expect(
      (await call('GET', `/v1/sessions/${s}/events`, { headers: { 'last-event-id': 'x'.repeat(300) } })).status,
    ).toBe(400);

    expect((await call('GET', `/v1/sessions/${uid('none')}/tools`)).json.error.code).toBe('session_not_found');
    expect((await call('POST', `/v1/sessions/${uid('none')}/runs/r1/rounds`, { body: { calls: [] } })).status).toBe(
      404,
    );
    const unknown = await call('POST', `/v1/sessions/${s}/confirmations/cf-none`, { body: { approve: true } });
    expect(unknown.json.error.code).toBe('confirmation_not_found');

    const key = { 'idempotency-key': uid('key') };
    await call('POST', rounds, { body: { calls: [rt('calculate', { expression: '1' })] }, headers: key });
    const conflict = await call('POST', rounds, {
      body: { calls: [rt('calculate', { expression: '2' })] },
      headers: key,
    });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error.code).toBe('idempotency_conflict');

    const big = await call('PUT', `/v1/sessions/${s}`, {
      body: { provider: 'openai', pad: 'x'.repeat(4 * 1024 * 1024) },
    });
    expect(big.status).toBe(413);
  });
});
