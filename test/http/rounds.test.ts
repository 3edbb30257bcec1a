import { MAX_BODY_BYTES, MAX_CALLS_PER_ROUND } from '@tool-dispatch/shared';
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

async function calcSession(provider = 'openai') {
  const s = uid('s');
  await putSession(h, s, { provider });
  await fetchSchemas(h, s, ['calculate']);
  return s;
}

const historyKey = async (s: string) =>
  (await h.api('GET', `/v1/sessions/${s}/history`)).json.results
    .map((e: { id: string; status: string }) => `${e.id}:${e.status}`)
    .join('|');

describe('POST /v1/sessions/{session}/runs/{run}/rounds', () => {
  describe('call shapes', () => {
    it('runs native calls with args as an object or a JSON string, one result per call in call order', async () => {
      const s = await calcSession();
      const calls = [
        rt('calculate', { expression: '2+3' }),
        { id: uid('c'), name: 'run_tool', args: JSON.stringify({ name: 'calculate', args: { expression: '3+4' } }) },
      ];
      const b = await round(h, s, uid('run'), calls);
      expect(typeof b.round).toBe('string');
      expect(b.results.map((r: { id: string }) => r.id)).toEqual(calls.map((c) => c.id));
      expect(b.results.map((r: { output: { value: number } }) => r.output.value)).toEqual([5, 7]);
      expect(b.results[0]).toMatchObject({ name: 'calculate', status: 'ok' });
      expect(typeof b.results[0].durationMs).toBe('number');
      expect(b.messages).toBeUndefined();
      expect(b.content).toBeUndefined();
    });

    it('runs OpenAI-shaped calls and adds tool messages for format=openai', async () => {
      const s = await calcSession();
      const fn = (id: string, name: string, args: string) => ({
        id,
        type: 'function',
        function: { name, arguments: args },
      });
      const calls = [
        fn(uid('call'), 'run_tool', JSON.stringify({ name: 'calculate', args: { expression: '2+3' } })),
        fn(uid('call'), 'run_tool', '{not json'),
        fn(uid('call'), 'find_tools', JSON.stringify({ names: ['calculate'] })),
      ];
      const b = await round(h, s, uid('run'), calls, '?format=openai');
      expect(b.results.map((r: { status: string }) => r.status)).toEqual(['ok', 'invalid', 'ok']);
      expect(b.messages).toHaveLength(3);
      b.messages.forEach((m: { role: string; tool_call_id: string; content: unknown }, i: number) => {
        expect(m.role).toBe('tool');
        expect(m.tool_call_id).toBe(calls[i]?.id);
        expect(typeof m.content).toBe('string');
      });
      expect(JSON.parse(b.messages[0].content)).toEqual({ value: 5 });
      expect(b.messages[1].content).toBe(b.results[1].error.message);
    });

    it('runs OpenAI Responses function_call items by their call_id and adds function_call_output items for format=openai-responses', async () => {
      const s = await calcSession();
      const item = (callId: string, name: string, args: string, itemId?: string) => ({
        type: 'function_call',
        ...(itemId ? { id: itemId } : {}),
        call_id: callId,
        name,
        arguments: args,
      });
      const calls = [
        item(uid('call'), 'run_tool', JSON.stringify({ name: 'calculate', args: { expression: '2+3' } }), 'fc_123'),
        item(uid('call'), 'run_tool', '{not json'),
      ];
      const b = await round(h, s, uid('run'), calls, '?format=openai-responses');
      expect(b.results.map((r: { id: string }) => r.id)).toEqual(calls.map((c) => c.call_id));
      expect(b.results.map((r: { status: string }) => r.status)).toEqual(['ok', 'invalid']);
      expect(b.items).toEqual([
        { type: 'function_call_output', call_id: calls[0]?.call_id, output: JSON.stringify({ value: 5 }) },
        { type: 'function_call_output', call_id: calls[1]?.call_id, output: b.results[1].error.message },
      ]);
      expect(b.messages).toBeUndefined();
    });

    it('answers 400 for a function_call item without a valid call_id, and runs nothing', async () => {
      const s = await calcSession();
      const r = await h.api('POST', `/v1/sessions/${s}/runs/${uid('run')}/rounds`, {
        calls: [{ type: 'function_call', id: 'fc_1', name: 'calculate', arguments: '{}' }],
      });
      expect(r.status).toBe(400);
      expect(r.json.error.message).toMatch(/call_id/);
    });

    it('runs Anthropic tool_use blocks and adds tool_result blocks for format=anthropic', async () => {
      const s = await calcSession('anthropic');
      const calls = [
        {
          type: 'tool_use',
          id: uid('toolu'),
          name: 'run_tool',
          input: { name: 'calculate', args: { expression: '3*3' } },
        },
        { type: 'tool_use', id: uid('toolu'), name: 'run_tool', input: { name: 'calculate', args: { expression: 9 } } },
      ];
      const b = await round(h, s, uid('run'), calls, '?format=anthropic');
      expect(b.results.map((r: { status: string }) => r.status)).toEqual(['ok', 'invalid']);
      expect(b.content).toEqual([
        { type: 'tool_result', tool_use_id: calls[0]?.id, content: JSON.stringify({ value: 9 }), is_error: false },
        { type: 'tool_result', tool_use_id: calls[1]?.id, content: b.results[1].error.message, is_error: true },
      ]);
    });

    it('takes a whole Anthropic content array: text and thinking blocks end invalid, saying so, and get no tool_result', async () => {
      const s = await calcSession('anthropic');
      const toolUse = uid('toolu');
      const calls = [
        { type: 'thinking', thinking: 'The user wants 3*3.', signature: 'sig' },
        { type: 'text', text: 'Let me compute that.', citations: null },
        { type: 'tool_use', id: toolUse, name: 'run_tool', input: { name: 'calculate', args: { expression: '3*3' } } },
      ];
      const b = await round(h, s, uid('run'), calls, '?format=anthropic');
      expect(b.results.map((r: { id: string; status: string }) => `${r.id}:${r.status}`)).toEqual([
        'call-0:invalid',
        'call-1:invalid',
        `${toolUse}:ok`,
      ]);
      expect(b.results[1].error.message).toBe(
        'This is a text block (type "text"), not a function call: nothing was run.',
      );
      expect(b.content.map((c: { tool_use_id: string }) => c.tool_use_id)).toEqual([toolUse]);
    });

    it('answers an OpenAI custom tool call invalid, naming the tool, with a tool message for it', async () => {
      const s = await calcSession();
      const id = uid('call');
      const b = await round(
        h,
        s,
        uid('run'),
        [{ id, type: 'custom', custom: { name: 'calculate', input: '3*3' } }],
        '?format=openai',
      );
      expect(b.results[0]).toMatchObject({ id, name: 'calculate', status: 'invalid', error: { code: 'invalid' } });
      expect(b.results[0].error.message).toMatch(/^"calculate" was called as an OpenAI custom tool call/);
      expect(b.messages).toEqual([{ role: 'tool', tool_call_id: id, content: b.results[0].error.message }]);
    });

    it('answers bad args with an invalid result for that call, not a 400 for the round', async () => {
      const s = await calcSession();
      const b = await round(h, s, uid('run'), [
        { id: uid('c'), name: 'run_tool', args: '[1,2]' },
        { id: uid('c'), name: 'run_tool', args: 5 },
        { id: uid('c'), type: 'function', function: { name: 'run_tool', arguments: '"a string"' } },
        rt('calculate', { expression: '1+1' }),
      ]);
      expect(b.results.map((r: { status: string }) => r.status)).toEqual(['invalid', 'invalid', 'invalid', 'ok']);
      for (const r of b.results.slice(0, 3)) expect(r.error.code).toBe('invalid');
    });

    it('answers an empty round with no results', async () => {
      const s = await calcSession();
      const b = await round(h, s, uid('run'), []);
      expect(b.results).toEqual([]);
    });
  });

  describe('with an Idempotency-Key', () => {
    const post = (s: string, run: string, calls: unknown[], key: string) =>
      h.api('POST', `/v1/sessions/${s}/runs/${run}/rounds`, { calls }, { 'idempotency-key': key });

    it('answers a retry with the first submission’s round without running its calls again', async () => {
      const s = await calcSession();
      const run = uid('run');
      const calls = [rt('calculate', { expression: '4+4' })];
      const key = uid('key');
      const first = await post(s, run, calls, key);
      const before = await historyKey(s);
      const again = await post(s, run, calls, key);
      expect(first.status).toBe(200);
      expect(again.status).toBe(200);
      expect(again.json.round).toBe(first.json.round);
      expect(again.json.results).toEqual(first.json.results);
      expect(await historyKey(s)).toBe(before);
    });

    it('gives a concurrent retry the same round as the submission still in progress', async () => {
      const s = uid('s');
      await putSession(h, s, { provider: 'openai', autoApprove: ['run_command'] });
      await fetchSchemas(h, s, ['run_command']);
      const run = uid('run');
      const calls = [rt('run_command', { command: 'sleep 0.4' })];
      const key = uid('key');
      const [a, b] = await Promise.all([post(s, run, calls, key), post(s, run, calls, key)]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(a.json.round).toBe(b.json.round);
      const hist = (await h.api('GET', `/v1/sessions/${s}/history?tool=run_command`)).json.results;
      expect(hist).toHaveLength(1);
    });

    it('answers 409 for the same key with different calls, and runs nothing', async () => {
      const s = await calcSession();
      const run = uid('run');
      const key = uid('key');
      await post(s, run, [rt('calculate', { expression: '1+2' }, 'same')], key);
      const before = await historyKey(s);
      const r = await post(s, run, [rt('calculate', { expression: '9+9' }, 'same')], key);
      expectErrorBody(r, 409, 'idempotency_conflict');
      expect(await historyKey(s)).toBe(before);
    });

    it('scopes keys to the run', async () => {
      const s = await calcSession();
      const key = uid('key');
      const calls = [rt('calculate', { expression: '1+2' })];
      const a = await post(s, uid('run'), calls, key);
      const b = await post(s, uid('run'), calls, key);
      expect(b.json.round).not.toBe(a.json.round);
    });

    it('answers 400 for a key that is not an id', async () => {
      const s = await calcSession();
      expectErrorBody(await post(s, uid('run'), [], 'has space'), 400, 'invalid_id');
      expectErrorBody(await post(s, uid('run'), [], 'k'.repeat(129)), 400, 'invalid_id');
    });
  });

  describe('rejected requests', () => {
    it('answer 400, 404 or 413 with an error body and change no state', async () => {
      const s = await calcSession();
      const run = uid('run');
      const base = `/v1/sessions/${s}/runs/${run}/rounds`;
      const before = await historyKey(s);
      const tooMany = Array.from({ length: MAX_CALLS_PER_ROUND + 1 }, () => rt('calculate', { expression: '1+1' }));
      const cases: Array<[string, string, unknown, number, Record<string, string>?]> = [
        ['a body that is not JSON', base, 'not json', 400],
        ['a body that is not JSON, sent as text/plain', base, 'not json', 400, { 'content-type': 'text/plain' }],
        ['an empty body', base, '', 400],
        ['a body without calls', base, {}, 400],
        ['calls that is not an array', base, { calls: 'nope' }, 400],
        ['a body that is an array', base, [rt('calculate', { expression: '1' })], 400],
        ['a call that is not an object', base, { calls: [rt('calculate', { expression: '1' }), 'x'] }, 400],
        ['a call without an id', base, { calls: [{ name: 'find_tools', args: {} }] }, 400],
        ['a call id with a space', base, { calls: [{ id: 'bad id', name: 'find_tools', args: {} }] }, 400],
        ['a call id that is a number', base, { calls: [{ id: 7, name: 'find_tools', args: {} }] }, 400],
        [
          'an OpenAI call with a bad id',
          base,
          { calls: [{ id: '', type: 'function', function: { name: 'x', arguments: '{}' } }] },
          400,
        ],
        ['more calls than MAX_CALLS_PER_ROUND', base, { calls: tooMany }, 400],
        ['a run id with a space', `/v1/sessions/${s}/runs/bad%20run/rounds`, { calls: [] }, 400],
        ['a 129-character run id', `/v1/sessions/${s}/runs/${'r'.repeat(129)}/rounds`, { calls: [] }, 400],
        ['a 200-character session id', `/v1/sessions/${'s'.repeat(200)}/runs/r/rounds`, { calls: [] }, 400],
        ['an unknown format', `${base}?format=xml`, { calls: [rt('calculate', { expression: '1' })] }, 400],
        [
          'a body over MAX_BODY_BYTES',
          base,
          { calls: [rt('calculate', { expression: 'x'.repeat(MAX_BODY_BYTES) })] },
          413,
        ],
      ];
      for (const [what, p, body, status, headers] of cases) {
        const r = await h.api('POST', p, body, headers);
        expect(r.status, `${what}: ${r.text.slice(0, 200)}`).toBe(status);
        expectErrorBody(r, status);
      }
      expect(await historyKey(s)).toBe(before);
    });

    it('name MAX_CALLS_PER_ROUND in the 400 for too many calls', async () => {
      const s = await calcSession();
      const calls = Array.from({ length: MAX_CALLS_PER_ROUND + 1 }, (_, i) => direct('find_tools', { query: `${i}` }));
      const r = await h.api('POST', `/v1/sessions/${s}/runs/${uid('run')}/rounds`, { calls });
      expectErrorBody(r, 400, 'too_many_calls');
      expect(r.json.error.message).toContain(String(MAX_CALLS_PER_ROUND));
    });

    it('answer 404 for an unknown session and create nothing', async () => {
      const s = uid('never');
      const r = await h.api('POST', `/v1/sessions/${s}/runs/r/rounds`, { calls: [direct('find_tools', {})] });
      expectErrorBody(r, 404, 'session_not_found');
      expect((await h.api('GET', `/v1/sessions/${s}`)).status).toBe(404);
    });
  });

  describe('content types', () => {
    it.each([['application/json; charset=utf-8'], ['application/vnd.api+json'], ['text/plain'], ['not a media type']])(
      'parses a JSON body sent as %s',
      async (type) => {
        const s = await calcSession();
        const r = await h.api(
          'POST',
          `/v1/sessions/${s}/runs/${uid('run')}/rounds`,
          JSON.stringify({ calls: [rt('calculate', { expression: '1+1' })] }),
          { 'content-type': type },
        );
        expect(r.status, r.text).toBe(200);
        expect(r.json.results[0].output).toEqual({ value: 2 });
      },
    );

    it('parses a JSON body sent without a Content-Type', async () => {
      const s = await calcSession();
      const body = new TextEncoder().encode(JSON.stringify({ calls: [rt('calculate', { expression: '2+2' })] }));
      const res = await fetch(`${h.base}/v1/sessions/${s}/runs/${uid('run')}/rounds`, { method: 'POST', body });
      expect(res.status).toBe(200);
      const b = (await res.json()) as { results: Array<{ output: unknown }> };
      expect(b.results[0]?.output).toEqual({ value: 4 });
    });
  });
});

describe('DELETE /v1/sessions/{session}/runs/{run}', () => {
  it('cancels a call awaiting approval: the round answers error/cancelled and the count is 1', async () => {
    const s = uid('s');
    await putSession(h, s);
    await fetchSchemas(h, s, ['run_command']);
    const run = uid('run');
    const pending = h.api('POST', `/v1/sessions/${s}/runs/${run}/rounds`, {
      calls: [rt('run_command', { command: 'echo never' })],
    });
    await waitForPending(s, 1);
    const r = await h.api('DELETE', `/v1/sessions/${s}/runs/${run}`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ cancelled: 1 });
    const b = await pending;
    expect(b.json.results[0]).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    expect((await h.api('GET', `/v1/sessions/${s}/confirmations`)).json.confirmations).toEqual([]);
  });

  it('cancels a running command', async () => {
    const s = uid('s');
    await putSession(h, s, { provider: 'openai', autoApprove: ['run_command'] });
    await fetchSchemas(h, s, ['run_command']);
    const run = uid('run');
    const started = Date.now();
    const pending = h.api('POST', `/v1/sessions/${s}/runs/${run}/rounds`, {
      calls: [rt('run_command', { command: 'sleep 10' })],
    });
    await new Promise((r) => setTimeout(r, 300));
    const r = await h.api('DELETE', `/v1/sessions/${s}/runs/${run}`);
    expect(r.json).toEqual({ cancelled: 1 });
    const b = await pending;
    expect(b.json.results[0]).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('answers {cancelled: 0} for a run with nothing in flight', async () => {
    const s = await calcSession();
    const r = await h.api('DELETE', `/v1/sessions/${s}/runs/${uid('run')}`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ cancelled: 0 });
  });

  it('answers 404 for an unknown session and 400 for a bad run id', async () => {
    expectErrorBody(await h.api('DELETE', `/v1/sessions/${uid('none')}/runs/r1`), 404, 'session_not_found');
    const s = await calcSession();
    expectErrorBody(await h.api('DELETE', `/v1/sessions/${s}/runs/bad%20run`), 400, 'invalid_id');
  });
});

describe('errors of the framework itself', () => {
  it('answers an unknown route with 404 in the error shape', async () => {
    expectErrorBody(await h.api('GET', '/v1/nothing-here'), 404, 'not_found');
  });

  it('answers a malformed percent-encoding with 400 in the error shape', async () => {
    expectErrorBody(await h.api('PUT', '/v1/sessions/a%ZZ', { provider: 'openai' }), 400);
  });
});

async function waitForPending(s: string, n: number) {
  for (let i = 0; i < 200; i++) {
    const r = await h.api('GET', `/v1/sessions/${s}/confirmations`);
    if (r.json.confirmations.length >= n) return r.json.confirmations;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error('no pending confirmation');
}
