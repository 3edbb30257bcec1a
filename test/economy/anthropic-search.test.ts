// Anthropic's tool search (API.md v1.2 `toolSearch: "anthropic"`, issue 28) through the real
// service: the anthropic tools array marks every tool but find_tools `defer_loading`, every tool
// is loaded (called directly; run_tool not offered), a tool is fetched once find_tools returned it,
// and a find_tools result in the anthropic view is `tool_reference` blocks.
import { expect, it } from 'vitest';
import { direct, uid } from '../conformance/api.js';
import { useService } from '../conformance/fixture.js';

const f = useService('embedded');

async function searchSession(): Promise<string> {
  const s = uid('s');
  await f.api.putSession(s, { provider: 'anthropic', toolSearch: 'anthropic' });
  return s;
}

it('gives every tool in Anthropic’s shape with its full schema, defer_loading on all but find_tools, no run_tool', async () => {
  const s = await searchSession();
  const v = await f.api.request('GET', `/v1/sessions/${s}/tools?format=anthropic`);
  const tools = v.json.tools as Array<Record<string, unknown>>;
  const names = tools.map((t) => t.name);
  expect(names).not.toContain('run_tool');
  for (const n of ['find_tools', 'read_files', 'calculate', 'edit_file', 'ask_user']) expect(names).toContain(n);
  for (const t of tools) expect(t.defer_loading, String(t.name)).toBe(t.name === 'find_tools' ? undefined : true);
  const calc = tools.find((t) => t.name === 'calculate');
  const catalog = (await f.api.request('GET', '/v1/tools')).json.tools as Array<Record<string, unknown>>;
  expect(calc?.input_schema).toEqual({
    ...(catalog.find((t) => t.name === 'calculate')?.parameters as object),
    type: 'object',
  });
  expect(String(v.json.context)).toMatch(/find_tools/);
  // Other formats have no defer_loading; a session without toolSearch neither.
  const neutral = await f.api.request('GET', `/v1/sessions/${s}/tools`);
  expect(JSON.stringify(neutral.json.tools)).not.toContain('defer_loading');
  const plain = uid('s');
  await f.api.putSession(plain, { provider: 'anthropic' });
  const plainView = await f.api.request('GET', `/v1/sessions/${plain}/tools?format=anthropic`);
  expect(JSON.stringify(plainView.json.tools)).not.toContain('defer_loading');
});

it('loads every tool: a direct call before any search answers its schema, after find_tools returned it runs; run_tool is refused', async () => {
  const s = await searchSession();
  const run = uid('run');
  const before = await f.api.one(s, direct('calculate', { expression: '1+1' }), run);
  expect(before.status).toBe('schema');
  const s2 = await searchSession();
  const b = await f.api.round(s2, uid('run'), [
    direct('find_tools', { query: 'evaluate an arithmetic expression' }),
    direct('calculate', { expression: '6*7' }),
  ]);
  expect(b.results[1]).toMatchObject({ status: 'ok', output: { value: 42 } });
  const viaRunTool = await f.api.one(s2, direct('run_tool', { name: 'calculate', args: { expression: '1' } }));
  expect(viaRunTool.status).not.toBe('ok');
});

it('answers a find_tools result in the anthropic view as tool_reference blocks; other results as text', async () => {
  const s = await searchSession();
  const calls = [
    { type: 'tool_use', id: 'toolu_a', name: 'find_tools', input: { query: 'read files in the workspace', limit: 3 } },
    { type: 'tool_use', id: 'toolu_b', name: 'find_tools', input: { names: ['calculate', 'nope'] } },
    { type: 'tool_use', id: 'toolu_c', name: 'find_tools', input: { query: 'xylophone' } },
  ];
  const r = await f.api.request('POST', `/v1/sessions/${s}/runs/${uid('run')}/rounds?format=anthropic`, { calls });
  expect(r.status).toBe(200);
  const content = r.json.content as Array<{ tool_use_id: string; content: unknown; is_error: boolean }>;
  const found = (r.json.results[0].output.tools as Array<{ name: string }>).map((t) => t.name);
  expect(found.length).toBeGreaterThan(0);
  expect(content[0]?.content).toEqual(found.map((tool_name) => ({ type: 'tool_reference', tool_name })));
  expect(content[1]?.content).toEqual([{ type: 'tool_reference', tool_name: 'calculate' }]);
  expect(typeof content[2]?.content).toBe('string'); // nothing found: the text says so
  // Without toolSearch the same round is text.
  const plain = uid('s');
  await f.api.putSession(plain, { provider: 'anthropic' });
  const p = await f.api.request('POST', `/v1/sessions/${plain}/runs/${uid('run')}/rounds?format=anthropic`, { calls });
  for (const c of p.json.content as Array<{ content: unknown }>) expect(typeof c.content).toBe('string');
});

it('refuses a toolSearch that is not "anthropic", or on another provider, with 400 naming the problem', async () => {
  for (const [body, problem] of [
    [{ provider: 'anthropic', toolSearch: 'openai' }, /toolSearch must be "anthropic"/],
    [{ provider: 'anthropic', toolSearch: true }, /toolSearch must be "anthropic"/],
    [{ provider: 'openai', toolSearch: 'anthropic' }, /needs provider "anthropic"/],
  ] as const) {
    const r = await f.api.request('PUT', `/v1/sessions/${uid('s')}`, body);
    expect(r.status, JSON.stringify(body)).toBe(400);
    expect(r.json.error.message).toMatch(problem);
  }
});
