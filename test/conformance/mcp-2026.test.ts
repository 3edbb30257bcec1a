// MCP protocol 2026-07-28 at /mcp beside 2025-11-25 (API.md v1.3 "MCP protocol 2026-07-28 beside
// 2025-11-25"), driven by the official SDK v2 client pinned to 2026-07-28 against the real
// processes in the three modes; distributed and cluster add a second coordinator, and a client's
// stateless requests alternate between the two (no initialize, no Mcp-Session-Id).
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { mcpToolName } from '@tool-dispatch/shared';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { until } from '../support/until.js';
import { Api } from './api.js';
import { describeModes, useService } from './fixture.js';
import {
  markedSeconds,
  overRedis,
  pidsWithArg,
  REPO_ROOT,
  sleep,
  startExtraCoordinator,
  stopGroup,
} from './service.js';

const TOKENS = {
  a: { token: 'mcp26-tok-a-backend-0123456789', name: 'a-backend', tenant: 'ta', role: 'backend' },
  b: { token: 'mcp26-tok-b-backend-0123456789', name: 'b-backend', tenant: 'tb', role: 'backend' },
  ops: { token: 'mcp26-tok-operator-0123456789', name: 'ops', tenant: '*', role: 'operator' },
} as const;
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const TOKENS_FILE = path.join(mkdtempSync(path.join(tmpdir(), 'td-mcp26-tokens-')), 'tokens.json');
writeFileSync(
  TOKENS_FILE,
  JSON.stringify({
    tokens: Object.values(TOKENS).map(({ token, name, tenant, role }) => ({ name, sha256: sha(token), tenant, role })),
  }),
);
/** Per mode: the fake MCP server's config, and the file its extra tools are read from (a change of it: list_changed). */
const toolsFileOf = (mode: string) => path.join(path.dirname(TOKENS_FILE), `fake-tools-${mode}.json`);
function configOf(mode: string): string {
  const file = path.join(path.dirname(TOKENS_FILE), `mcp-${mode}.json`);
  const fake = path.join(REPO_ROOT, 'test', 'support', 'mcp-fake-server.mjs');
  writeFileSync(
    file,
    JSON.stringify({
      mcpServers: { fake: { command: 'node', args: [fake], env: { MCP_FAKE_TOOLS_FILE: toolsFileOf(mode) } } },
    }),
  );
  return file;
}
const ASK = mcpToolName('fake', 'ask');
/** Short, so a test can see a run end: calls of one burst come well within it. */
const IDLE_MS = 4000;
const RESULT = 'tool-dispatch/result';

type CallResult = Awaited<ReturnType<Client['callTool']>>;
type Elicit = (params: Record<string, unknown>) => Promise<Record<string, unknown>>;
const metaOf = (r: CallResult) => (r._meta?.[RESULT] ?? {}) as Record<string, unknown>;
const textOf = (r: CallResult) =>
  (r.content as Array<{ type: string; text?: string }>)
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('');

/** One HTTP exchange the client made: where, its headers, the JSON-RPC method and the HTTP status. */
interface Exchange {
  base: string;
  headers: Headers;
  method: string | undefined;
  /** 0 while the request is in flight. */
  status: number;
}

describeModes('MCP 2026-07-28 at /mcp', (mode) => {
  const f = useService(mode, {
    env: { TD_API_TOKENS: TOKENS_FILE, TD_MCP_RUN_IDLE_MS: String(IDLE_MS), TD_MCP_CONFIG: configOf(mode) },
    token: TOKENS.ops.token,
  });
  let second: Awaited<ReturnType<typeof startExtraCoordinator>> | undefined;
  const clients: Client[] = [];
  const bases = () => (second ? [f.service.base, second.base] : [f.service.base]);

  beforeAll(async () => {
    if (overRedis(mode)) second = await startExtraCoordinator(f.service, 'coordinator-mcp26');
    // The fake server connects after start-up: wait for its tools.
    await until(
      async () => {
        const r = await f.api.request('GET', '/v1/tools');
        return (r.json.tools as Array<{ name: string }>).some((t) => t.name === ASK) ? true : undefined;
      },
      { timeoutMs: 60_000, what: 'the fake MCP server’s tools' },
    );
  }, 150_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    if (second) await stopGroup(second.group);
  });

  /** An SDK v2 client pinned to 2026-07-28, as `who`; its requests alternate over the coordinators. */
  async function connect(o: { who?: 'a' | 'b'; elicit?: Elicit; query?: string } = {}) {
    const all = bases();
    let turn = 0;
    const exchanges: Exchange[] = [];
    const client = new Client(
      { name: `td-mcp26-${mode}`, version: '1.0.0' },
      {
        versionNegotiation: { mode: { pin: '2026-07-28' } },
        capabilities: o.elicit ? { elicitation: { form: {} } } : {},
      },
    );
    if (o.elicit) {
      const elicit = o.elicit;
      client.setRequestHandler('elicitation/create', async (req) => (await elicit(req.params)) as never);
    }
    const first = all[0] as string;
    const transport = new StreamableHTTPClientTransport(new URL(`${first}/mcp${o.query ?? ''}`), {
      requestInit: { headers: { authorization: `Bearer ${TOKENS[o.who ?? 'a'].token}` } },
      fetch: async (url, init) => {
        const base = all[turn++ % all.length] as string;
        const headers = new Headers(init?.headers);
        const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }) : {};
        const exchange: Exchange = { base, headers, method: body.method, status: 0 };
        exchanges.push(exchange);
        const res = await fetch(String(url).replace(first, base), init);
        exchange.status = res.status;
        return res;
      },
    });
    await client.connect(transport);
    clients.push(client);
    return { client, exchanges };
  }
  const api = (who: keyof typeof TOKENS = 'ops', base = f.service.base) => new Api(base, TOKENS[who].token);
  const history = async (session: string) => (await api().history(session)) as Array<Record<string, unknown>>;

  it('speaks 2026-07-28 without initialize or Mcp-Session-Id: server/discover, tools/list with Mcp-Method headers, over both coordinators', async () => {
    const c = await connect();
    expect(c.client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const { tools } = await c.client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain('calculate');
    expect(names).toContain('find_tools');
    expect(names).not.toContain('run_tool');
    expect(c.exchanges.map((e) => e.method)).toEqual(['server/discover', 'tools/list']);
    for (const e of c.exchanges) {
      expect(e.status).toBe(200);
      expect(e.headers.get('mcp-session-id')).toBeNull();
      expect(e.headers.get('mcp-method')).toBe(e.method);
    }
    if (second) expect(new Set(c.exchanges.map((e) => e.base)).size).toBe(2);
    // The session is the token's: mcp-<token name>, provider mcp, made on first use in its tenant.
    const s = await api().request('GET', '/v1/sessions/mcp-a-backend');
    expect(s.status).toBe(200);
    expect(s.json).toMatchObject({ provider: 'mcp', tenant: 'ta' });
  });

  it('runs tools/call in the session’s current run mcp-<n>: a repeat on the other coordinator is deduped; _meta names another run', async () => {
    const c = await connect();
    const n = Date.now() % 1000;
    const expression = `${n}*3`;
    const r1 = await c.client.callTool({ name: 'calculate', arguments: { expression } });
    const r2 = await c.client.callTool({ name: 'calculate', arguments: { expression } });
    expect(r1.isError).toBe(false);
    expect(r1.structuredContent).toEqual({ value: n * 3 });
    expect(metaOf(r2)).toMatchObject({ status: 'deduped', dedupedFrom: metaOf(r1).id });
    const calls = c.exchanges.filter((e) => e.method === 'tools/call');
    if (second) expect(calls[0]?.base).not.toBe(calls[1]?.base);
    const h = await history('mcp-a-backend');
    const entry = h.find((e) => e.id === metaOf(r1).id);
    expect(String(entry?.run)).toMatch(/^mcp-\d+$/);
    const named = await c.client.callTool({
      name: 'calculate',
      arguments: { expression },
      _meta: { 'tool-dispatch/run': 'mcp26-named-run', 'tool-dispatch/callId': 'named-1' },
    });
    expect(metaOf(named)).toMatchObject({ id: 'named-1', status: 'ok' });
    expect((await history('mcp-a-backend')).find((e) => e.id === 'named-1')?.run).toBe('mcp26-named-run');
  });

  it('ends the run mcp-<n> after TD_MCP_RUN_IDLE_MS without a call: the next call is in mcp-<n+1>, not deduped', async () => {
    const c = await connect();
    const args = { expression: `${Date.now() % 997}+1` };
    const before = await c.client.callTool({ name: 'calculate', arguments: args });
    const runBefore = (await history('mcp-a-backend')).find((e) => e.id === metaOf(before).id)?.run as string;
    await sleep(IDLE_MS + 500);
    const after = await c.client.callTool({ name: 'calculate', arguments: args });
    expect(metaOf(after).status).toBe('ok');
    const runAfter = (await history('mcp-a-backend')).find((e) => e.id === metaOf(after).id)?.run as string;
    expect(Number(runAfter.slice(4))).toBe(Number(runBefore.slice(4)) + 1);
    // Within the new run a repeat is deduped again, whichever coordinator answers.
    const again = await c.client.callTool({ name: 'calculate', arguments: args });
    expect(metaOf(again)).toMatchObject({ status: 'deduped', dedupedFrom: metaOf(after).id });
  });

  it('asks the confirm gate as input_required; the retry with the answer resumes the same round (approve writes the file, deny does not)', async () => {
    const asked: Array<Record<string, unknown>> = [];
    let approve = true;
    const c = await connect({
      elicit: async (p) => {
        asked.push(p);
        return { action: 'accept', content: { approve } };
      },
    });
    const tag = `f-${Date.now().toString(36)}`;
    const yes = await c.client.callTool({
      name: 'run_command',
      arguments: { command: `echo approved > ${tag}-yes.txt && cat ${tag}-yes.txt` },
    });
    expect(metaOf(yes).status, JSON.stringify(yes)).toBe('ok');
    expect(textOf(yes)).toContain('approved');
    expect(String(asked[0]?.message)).toContain(`${tag}-yes.txt`);
    expect(asked[0]?.requestedSchema).toMatchObject({ required: ['approve'] });
    // One round: the first request got input_required, the retry (another id, maybe another coordinator) the result.
    const legs = c.exchanges.filter((e) => e.method === 'tools/call');
    expect(legs).toHaveLength(2);
    if (second) expect(legs[0]?.base).not.toBe(legs[1]?.base);
    const h = await history('mcp-a-backend');
    expect(h.filter((e) => e.id === metaOf(yes).id)).toHaveLength(1);
    expect((await api().pending('mcp-a-backend')).length).toBe(0);

    approve = false;
    const no = await c.client.callTool({
      name: 'run_command',
      arguments: { command: `echo denied > ${tag}-no.txt` },
    });
    expect(no.isError).toBe(true);
    expect(metaOf(no).status).toBe('denied');
    const read = await c.client.callTool({
      name: 'read_files',
      arguments: { paths: [`${tag}-no.txt`, `${tag}-yes.txt`] },
    });
    const text = textOf(read);
    expect(text).toContain('approved');
    expect(text).not.toContain('denied\\n');
  });

  it('lets the API answer first while the 2026 client is being asked: the approval through the API wins over the client’s no', async () => {
    const c = await connect({
      elicit: async () => {
        const [pending] = await api('ops').waitPending('mcp-a-backend', 1);
        const r = await api('ops', bases().at(-1)).answer('mcp-a-backend', pending?.confirmationId ?? '', {
          approve: true,
        });
        expect(r.status, r.text).toBe(200);
        return { action: 'accept', content: { approve: false } };
      },
    });
    const r = await c.client.callTool({ name: 'run_command', arguments: { command: 'echo api-first' } });
    expect(metaOf(r).status, JSON.stringify(r)).toBe('ok');
    expect(textOf(r)).toContain('api-first');
  });

  it('serves a 2025 client on the same endpoint as before: initialize, Mcp-Session-Id, its session mcp-<id>', async () => {
    const client = new Client({ name: 'td-mcp25', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${f.service.base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${TOKENS.a.token}` } },
    });
    await client.connect(transport);
    clients.push(client);
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const sid = transport.sessionId as string;
    expect(sid).toBeTruthy();
    const r = await client.callTool({ name: 'calculate', arguments: { expression: '2+2' } });
    expect(r.structuredContent).toEqual({ value: 4 });
    const h = await history(`mcp-${sid}`);
    expect(h.find((e) => e.id === metaOf(r).id)?.run).toBe(sid);
  });

  it('keeps tokens apart: another token’s session is not reachable, and its calls go to its own mcp-<name>', async () => {
    const a = await connect({ who: 'a' });
    await a.client.callTool({
      name: 'calculate',
      arguments: { expression: '7*7' },
      _meta: { 'tool-dispatch/callId': 'a-only' },
    });
    const b = await connect({ who: 'b' });
    const rb = await b.client.callTool({ name: 'calculate', arguments: { expression: '7*7' } });
    expect(metaOf(rb).status).toBe('ok'); // not deduped against a's call: another session
    expect((await history('mcp-b-backend')).some((e) => e.id === 'a-only')).toBe(false);
    const s = await api().request('GET', '/v1/sessions/mcp-b-backend');
    expect(s.json.tenant).toBe('tb');
    // ?session= naming a's session, as b: 404 in the error shape, nothing served.
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: 'intruder', version: '1' },
    };
    const res = await fetch(`${f.service.base}/mcp?session=mcp-a-backend`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKENS.b.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/list',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope } }),
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error?: { code?: string } }).error?.code).toBe('session_not_found');
  });
  it('asks ask_user and an upstream server’s own elicitation as input_required, and hands the answers back', async () => {
    const asked: Array<Record<string, unknown>> = [];
    const c = await connect({
      elicit: async (p) => {
        asked.push(p);
        if (String(p.message).includes('Which colour')) return { action: 'accept', content: { answer: 'blue' } };
        return { action: 'accept', content: { name: 'Ada' } };
      },
    });
    const r = await c.client.callTool({
      name: 'ask_user',
      arguments: { question: 'Which colour?', choices: ['red', 'blue'] },
    });
    expect(metaOf(r).status, JSON.stringify(r)).toBe('ok');
    expect(r.structuredContent).toMatchObject({ answer: 'blue' });
    expect(asked[0]?.requestedSchema).toEqual({
      type: 'object',
      properties: { answer: { type: 'string', enum: ['red', 'blue'] } },
      required: ['answer'],
    });
    const up = await c.client.callTool({ name: ASK, arguments: { message: 'Your name?' } });
    expect(metaOf(up).status, JSON.stringify(up)).toBe('ok');
    expect(JSON.stringify(up.content)).toContain('Ada');
    expect(asked[1]?.message).toBe('Your name?');
    const declining = await connect({ elicit: async () => ({ action: 'decline' }) });
    const d = await declining.client.callTool({ name: 'ask_user', arguments: { question: 'Sure?' } });
    expect(d.isError).toBe(true);
    expect(textOf(d)).toMatch(/declined/);
  });

  it('sends progress on the call’s stream, with where it is', async () => {
    const session = `mcp26-progress-${mode}`;
    await api().putSession(session, { provider: 'mcp', autoApprove: 'all', tenant: 'ta' });
    const c = await connect({ query: `?session=${session}` });
    const seen: Array<{ progress: number; message?: string | undefined }> = [];
    const r = await c.client.callTool(
      { name: 'run_command', arguments: { command: 'sleep 5' } },
      { onprogress: (p) => seen.push(p), timeout: 60_000 },
    );
    expect(metaOf(r).status).toBe('ok');
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen.map((p) => p.message)).toContain('running');
    for (let i = 1; i < seen.length; i++) expect(seen[i]?.progress).toBeGreaterThan(seen[i - 1]?.progress as number);
  });

  it('cancels the round when the client aborts the retried call (its stream closed), wherever the round runs; the command’s process is gone', async () => {
    const session = `mcp26-cancel-${mode}`;
    await api().putSession(session, { provider: 'mcp', tenant: 'ta' });
    const c = await connect({
      query: `?session=${session}`,
      elicit: async () => ({ action: 'accept', content: { approve: true } }),
    });
    const ac = new AbortController();
    const marked = markedSeconds(60);
    const call = c.client.callTool(
      {
        name: 'run_command',
        arguments: { command: `sleep ${marked} & echo started > child.pid; wait` },
        _meta: { 'tool-dispatch/callId': 'long26' },
      },
      { signal: ac.signal, timeout: 120_000 },
    );
    call.catch(() => undefined);
    const pidFile = path.join(f.service.workspace(session, 'ta'), 'child.pid');
    await until(async () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', {
      timeoutMs: 30_000,
      what: 'the command started',
    });
    // The first leg got input_required; the retry (the approval, on the other coordinator when there are two) is the one waiting.
    expect(c.exchanges.filter((e) => e.method === 'tools/call')).toHaveLength(2);
    ac.abort('stop');
    await expect(call).rejects.toBeDefined();
    const entry = await until(async () => (await history(session)).find((e) => e.id === 'long26'), {
      timeoutMs: 20_000,
      what: 'the cancelled call in history',
    });
    expect(entry).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    await until(async () => (pidsWithArg(marked).length === 0 ? true : undefined), {
      timeoutMs: 10_000,
      what: 'the command’s child gone',
    });
  });

  it('sends notifications/tools/list_changed on a subscriptions/listen stream when the catalog changes', async () => {
    const c = await connect();
    let changed = 0;
    c.client.setNotificationHandler('notifications/tools/list_changed', () => {
      changed++;
    });
    const sub = await c.client.listen({ toolsListChanged: true });
    try {
      expect(sub.honoredFilter).toMatchObject({ toolsListChanged: true });
      await sleep(1500); // the catalog's first look taken
      writeFileSync(toolsFileOf(mode), JSON.stringify([`extra_${mode}`]));
      await until(async () => (changed > 0 ? true : undefined), { timeoutMs: 30_000, what: 'list_changed' });
      // The notice came from one coordinator; the client's next request may reach the other, whose
      // catalog learns the tool from the workers' announcements a moment later.
      const extra = mcpToolName('fake', `extra_${mode}`);
      await until(async () => (await c.client.listTools()).tools.some((t) => t.name === extra), {
        what: `${extra} in tools/list after list_changed`,
      });
    } finally {
      await sub.close();
    }
  });

  it('refuses a requestState of another token or session (-32602), nothing run', async () => {
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
      'io.modelcontextprotocol/clientInfo': { name: 'forger', version: '1' },
    };
    const state = Buffer.from(
      JSON.stringify({
        v: 1,
        s: 'mcp-a-backend',
        p: 'a-backend',
        r: 'mcp-1',
        k: 'forged',
        c: 'mcp-forged',
        e: Date.now() + 60_000,
      }),
    ).toString('base64url');
    const res = await fetch(`${f.service.base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKENS.b.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'calculate',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name: 'calculate',
          arguments: { expression: '1+1' },
          requestState: state,
          inputResponses: {},
          _meta: envelope,
        },
      }),
    });
    const text = await res.text();
    expect(text).toMatch(/-32602/);
    expect(text).toMatch(/another session or token/);
    expect((await history('mcp-b-backend')).some((e) => e.id === 'mcp-forged')).toBe(false);
  });
});
