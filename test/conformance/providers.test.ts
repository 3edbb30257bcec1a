import { describe, expect, it } from 'vitest';
import { direct, rt, uid } from './api.js';
import { describeModes, useService } from './fixture.js';

/** The built-ins a worker ships a handler for (API.md's table, run_tool aside). */
const RUNNABLE = [
  'find_tools',
  'read_files',
  'find_files',
  'edit_file',
  'run_command',
  'http_request',
  'fetch_page',
  'search_web',
  'calculate',
  'write_todo',
  'download_file',
  // Answered by the coordinator from the session's history (API.md v1.1).
  'file_history',
  'error_history',
  // Answered by a person through the inputs endpoints (API.md v1.1 parked calls).
  'ask_user',
];
const DEFERRED = RUNNABLE.filter((n) => n !== 'find_tools');

// Not `ask_user`: that is a built-in (interactive) now, and a client tool cannot take its name.
const ASK_PERSON = {
  name: 'ask_person',
  description: 'Ask the person at the keyboard a question.',
  parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
};
const PICK_FILE = {
  name: 'pick_file',
  description: 'Let the person pick a file.',
  parameters: { type: 'object', properties: {} },
  confirm: true,
};

const sorted = (xs: string[]) => [...xs].sort();
// biome-ignore lint/suspicious/noExplicitAny: tools arrays of three shapes
const namesOf = (tools: any[]) => tools.map((t) => t.function?.name ?? t.name);

// DESIGN.md "Deferred schemas and providers" and API.md's tools endpoint and clientTools.
describeModes('providers, deferred schemas and client tools', (mode) => {
  const f = useService(mode);
  const tools = async (s: string, format?: string) => {
    const r = await f.api.request('GET', `/v1/sessions/${s}/tools${format ? `?format=${format}` : ''}`);
    expect(r.status, r.text).toBe(200);
    return r.json as { tools: Array<Record<string, unknown>>; context: string };
  };

  describe('for every provider but claude-code', () => {
    it.each(['openai', 'anthropic', 'some-other-provider'])(
      'lists only find_tools and run_tool (%s), and names every deferred tool in the context',
      async (provider) => {
        const s = uid('s');
        await f.api.putSession(s, { provider });
        const view = await tools(s);
        expect(sorted(namesOf(view.tools))).toEqual(['find_tools', 'run_tool']);
        for (const t of view.tools) {
          expect(Object.keys(t).sort()).toEqual(['description', 'name', 'parameters']);
        }
        for (const n of DEFERRED) expect(view.context).toContain(n);
      },
    );

    it('answers the openai and anthropic shapes of the tools array', async () => {
      const s = uid('s');
      await f.api.putSession(s, { provider: 'openai', clientTools: [ASK_PERSON] });
      const openai = await tools(s, 'openai');
      for (const t of openai.tools) {
        expect(t.type).toBe('function');
        expect(t.function).toEqual({
          name: expect.any(String),
          description: expect.any(String),
          parameters: expect.objectContaining({ type: 'object' }),
        });
      }
      const anthropic = await tools(s, 'anthropic');
      for (const t of anthropic.tools) {
        expect(Object.keys(t).sort()).toEqual(['description', 'input_schema', 'name']);
        expect((t.input_schema as { type: string }).type).toBe('object');
      }
      expect(sorted(namesOf(openai.tools))).toEqual(['ask_person', 'find_tools', 'run_tool']);
      expect(sorted(namesOf(anthropic.tools))).toEqual(['ask_person', 'find_tools', 'run_tool']);
    });

    it('returns a deferred tool’s schema on its first call (with problems), and runs it on the next', async () => {
      const s = await f.api.session([]);
      const run = uid('run');
      const first = await f.api.one(s, rt('calculate', { expression: 7 }), run);
      expect(first.status).toBe('schema');
      expect(first.output.tool.name).toBe('calculate');
      expect(first.output.tool.parameters.properties.expression).toBeDefined();
      expect(first.output.problems.join(' ')).toMatch(/expression/);
      const second = await f.api.one(s, rt('calculate', { expression: '6*7' }), run);
      expect(second).toMatchObject({ status: 'ok', output: { value: 42 } });
    });

    it('lets later calls of a round see the schemas earlier ones fetched', async () => {
      const s = await f.api.session([]);
      const b = await f.api.round(s, uid('run'), [
        rt('calculate', { expression: '1+1' }),
        rt('calculate', { expression: '2+2' }),
        direct('find_tools', { names: ['read_files'] }),
        rt('read_files', { paths: ['none.txt'] }),
      ]);
      expect(b.results.map((r) => r.status)).toEqual(['schema', 'ok', 'ok', 'ok']);
      expect(b.results[1]?.output).toEqual({ value: 4 });
    });

    it('keeps fetched schemas for the session, across runs', async () => {
      const s = await f.api.session(['calculate']);
      expect((await f.api.one(s, rt('calculate', { expression: '1' }), uid('run'))).status).toBe('ok');
    });

    it('refuses a direct call of a deferred tool, even after find_tools, hinting at find_tools and run_tool', async () => {
      const s = await f.api.session(['calculate']);
      const r = await f.api.one(s, direct('calculate', { expression: '1' }));
      expect(r).toMatchObject({ status: 'refused', name: 'calculate', error: { code: 'refused' } });
      expect(r.error?.message).toMatch(/find_tools/);
      expect(r.error?.message).toMatch(/run_tool/);
    });

    it('answers unknown for run_tool of a name that exists nowhere, and refused when it is called directly', async () => {
      const s = await f.api.session([]);
      const b = await f.api.round(s, uid('run'), [rt('nowhere_tool', {}), direct('nowhere_tool', {})]);
      expect(b.results.map((r) => r.status)).toEqual(['unknown', 'refused']);
    });
  });

  describe('for claude-code', () => {
    it('lists every runnable tool except run_tool', async () => {
      const s = uid('s');
      await f.api.putSession(s, { provider: 'claude-code' });
      const view = await tools(s);
      expect(sorted(namesOf(view.tools))).toEqual(sorted(RUNNABLE));
      expect(typeof view.context).toBe('string');
    });

    it('returns each deferred tool’s schema on its first direct call, then runs it; find_tools runs at once', async () => {
      const s = uid('s');
      await f.api.putSession(s, { provider: 'claude-code' });
      const run = uid('run');
      const b = await f.api.round(s, run, [
        direct('calculate', { expression: '2+3' }),
        direct('calculate', { expression: '3+3' }),
        direct('find_tools', { query: 'files' }),
        direct('write_todo', { items: [{ text: 'a' }] }),
      ]);
      expect(b.results.map((r) => r.status)).toEqual(['schema', 'ok', 'ok', 'schema']);
      expect(b.results[0]?.output.tool.name).toBe('calculate');
      expect(b.results[1]?.output).toEqual({ value: 6 });
      const again = await f.api.one(s, direct('write_todo', { items: [{ text: 'a' }] }), run);
      expect(again.status).toBe('ok');
    });

    it('marks schemas fetched by find_tools, so the first call then runs', async () => {
      const s = uid('s');
      await f.api.putSession(s, { provider: 'claude-code' });
      await f.api.fetchSchemas(s, ['calculate']);
      expect((await f.api.one(s, direct('calculate', { expression: '9' }))).status).toBe('ok');
    });

    it('refuses run_tool, which it does not load', async () => {
      const s = uid('s');
      await f.api.putSession(s, { provider: 'claude-code' });
      const r = await f.api.one(s, rt('calculate', { expression: '1' }));
      expect(r).toMatchObject({ status: 'refused', error: { code: 'refused' } });
    });
  });

  describe('client tools', () => {
    it.each(['openai', 'anthropic', 'claude-code'])(
      'are in the tools array of the session that declared them (%s), in every format',
      async (provider) => {
        const s = uid('s');
        await f.api.putSession(s, { provider, clientTools: [ASK_PERSON, PICK_FILE] });
        for (const format of [undefined, 'openai', 'anthropic']) {
          const names = namesOf((await tools(s, format)).tools);
          expect(names).toContain('ask_person');
          expect(names).toContain('pick_file');
        }
        const neutral = (await tools(s)).tools.find((t) => t.name === 'ask_person');
        expect(neutral).toEqual({
          name: 'ask_person',
          description: ASK_PERSON.description,
          parameters: ASK_PERSON.parameters,
        });
      },
    );

    it.each(['openai', 'claude-code'])(
      'start fetched and are parked for their client, never run by the dispatcher (%s; after a confirmation when flagged)',
      async (provider) => {
        const s = uid('s');
        await f.api.putSession(s, { provider, clientTools: [ASK_PERSON, PICK_FILE] });
        const calls = [
          direct('ask_person', { question: 'ok?' }),
          direct('pick_file', {}),
          ...(provider === 'openai' ? [rt('ask_person', { question: 'via run_tool' })] : []),
        ];
        const round = f.api.round(s, uid('run'), calls);
        round.catch(() => undefined);
        // pick_file is flagged confirm: its confirmation comes first, then it is parked like the others.
        const [confirmation] = await f.api.waitPending(s, 1);
        expect(confirmation?.name).toBe('pick_file');
        await f.api.answer(s, confirmation?.confirmationId ?? '', { approve: true });
        for (const call of calls) {
          let parked: Array<{ inputId: string; callId: string; kind: string }> = [];
          for (const end = Date.now() + 15_000; Date.now() < end; await new Promise((r) => setTimeout(r, 25))) {
            parked = (await f.api.request('GET', `/v1/sessions/${s}/inputs`)).json.inputs;
            if (parked.some((p) => p.callId === call.id)) break;
          }
          const input = parked.find((p) => p.callId === call.id);
          expect(input?.kind).toBe('client');
          const a = await f.api.request('POST', `/v1/sessions/${s}/inputs/${input?.inputId}`, { output: call.id });
          expect(a.status, a.text).toBe(200);
        }
        const b = await round;
        expect(b.results.map((r) => [r.status, r.output])).toEqual(calls.map((c) => ['ok', c.id]));
        expect(b.results.map((r) => r.name)).toEqual(calls.map((c) => (c.name === 'run_tool' ? 'ask_person' : c.name)));
        const recorded = await f.api.history(s, 'ask_person');
        expect(recorded.map((e) => e.status)).toEqual(
          calls.filter((c) => JSON.stringify(c).includes('ask_person')).map(() => 'ok'),
        );
      },
    );

    it('belong to their session only', async () => {
      const mine = uid('s');
      const other = uid('s');
      await f.api.putSession(mine, { provider: 'openai', clientTools: [ASK_PERSON] });
      await f.api.putSession(other, { provider: 'openai' });
      expect(namesOf((await tools(other)).tools)).not.toContain('ask_person');
      expect((await f.api.one(other, direct('ask_person', { question: 'x' }))).status).toBe('refused');
    });

    it('are replaced when the session is PUT again', async () => {
      const s = uid('s');
      await f.api.putSession(s, { provider: 'openai', clientTools: [ASK_PERSON] });
      await f.api.putSession(s, { provider: 'openai', clientTools: [PICK_FILE] });
      const names = namesOf((await tools(s)).tools);
      expect(names).toContain('pick_file');
      expect(names).not.toContain('ask_person');
    });

    it('answer 400 for a definition that is malformed, repeated, or names a built-in, and change nothing', async () => {
      const s = uid('s');
      await f.api.putSession(s, { provider: 'openai', clientTools: [ASK_PERSON] });
      const bad = [
        [{ name: 'x', description: 'no parameters' }],
        [{ ...ASK_PERSON, parameters: { type: 'nope' } }],
        [ASK_PERSON, ASK_PERSON],
        [{ ...ASK_PERSON, name: 'run_command' }],
        [{ ...ASK_PERSON, name: 'run_tool' }],
        [{ ...ASK_PERSON, concurrency: 'fast' }],
      ];
      for (const clientTools of bad) {
        const r = await f.api.request('PUT', `/v1/sessions/${s}`, { provider: 'openai', clientTools });
        expect(r.status, `${JSON.stringify(clientTools)} → ${r.text}`).toBe(400);
        expect(typeof r.json?.error?.message).toBe('string');
      }
      expect(namesOf((await tools(s)).tools)).toContain('ask_person');
    });
  });

  it('answers 404 for the tools of an unknown session', async () => {
    const r = await f.api.request('GET', `/v1/sessions/${uid('never')}/tools`);
    expect(r.status).toBe(404);
  });
});
