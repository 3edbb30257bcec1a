// tool-dispatch as an MCP server (API.md "MCP server (additions of v1.2)", issue 26), driven by the
// official SDK client (@modelcontextprotocol/client) over /mcp against the real processes in the
// three modes; distributed and cluster add a second coordinator, and one MCP session's requests
// alternate between the two.
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { mcpToolName } from '@tool-dispatch/shared';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { until } from '../support/until.js';
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

const pkgBin = (pkg: string) => {
  const dir = path.join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', pkg);
  const json = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  return path.join(dir, Object.values(json.bin)[0] as string);
};
const EVERYTHING = pkgBin('server-everything');
const FAKE = path.join(REPO_ROOT, 'test', 'support', 'mcp-fake-server.mjs');
const ECHO = mcpToolName('everything', 'echo');
const STRUCTURED = mcpToolName('everything', 'get-structured-content');
const ASK = mcpToolName('fake', 'ask');
const RESULT = 'tool-dispatch/result';

type CallResult = Awaited<ReturnType<Client['callTool']>>;
type Elicit = (params: Record<string, unknown>) => Promise<Record<string, unknown>>;

/** What the dispatcher says of a call in `_meta["tool-dispatch/result"]`. */
const metaOf = (r: CallResult) => (r._meta?.[RESULT] ?? {}) as Record<string, unknown>;
const textOf = (r: CallResult) =>
  (r.content as Array<{ type: string; text?: string }>)
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('');

describeModes('MCP server at /mcp', (mode) => {
  const tmp = realpathSync(mkdtempSync(path.join(tmpdir(), `td-mcps-${mode}-`)));
  const toolsFile = path.join(tmp, 'fake-tools.json');
  const config = path.join(tmp, 'mcp.json');
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        everything: { command: 'node', args: [EVERYTHING, 'stdio'] },
        fake: { command: 'node', args: [FAKE], env: { MCP_FAKE_TOOLS_FILE: toolsFile } },
      },
    }),
  );
  const f = useService(mode, { env: { TD_MCP_CONFIG: config } });
  /** The second coordinator (distributed and cluster). */
  let second: Awaited<ReturnType<typeof startExtraCoordinator>> | undefined;
  const clients: Client[] = [];

  beforeAll(async () => {
    if (overRedis(mode)) second = await startExtraCoordinator(f.service, 'coordinator-mcp');
    // The servers connect after start-up: wait for their tools.
    await until(
      async () => {
        const r = await f.api.request('GET', '/v1/tools');
        const names = (r.json.tools as Array<{ name: string }>).map((t) => t.name);
        return names.includes(ECHO) && names.includes(ASK) ? true : undefined;
      },
      { timeoutMs: 60_000, what: 'the MCP servers’ tools in the catalog' },
    );
  }, 150_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    if (second) await stopGroup(second.group);
    rmSync(tmp, { recursive: true, force: true });
  });

  /** An SDK client on /mcp; `bases` alternate request by request (one MCP session over coordinators). */
  async function connect(
    options: { elicit?: Elicit; bases?: string[]; query?: string; onListChanged?: () => void } = {},
  ) {
    const bases = options.bases ?? [f.service.base];
    let turn = 0;
    const used: string[] = [];
    const client = new Client(
      { name: `td-test-${mode}`, version: '1.0.0' },
      { capabilities: options.elicit ? { elicitation: { form: {} } } : {} },
    );
    if (options.elicit) {
      const elicit = options.elicit;
      client.setRequestHandler('elicitation/create', async (req) => (await elicit(req.params)) as never);
    }
    if (options.onListChanged) client.setNotificationHandler('notifications/tools/list_changed', options.onListChanged);
    const first = bases[0] as string;
    const transport = new StreamableHTTPClientTransport(new URL(`${first}/mcp${options.query ?? ''}`), {
      fetch: (url, init) => {
        const base = bases[turn++ % bases.length] as string;
        used.push(base);
        return fetch(String(url).replace(first, base), init);
      },
    });
    await client.connect(transport);
    clients.push(client);
    const sid = transport.sessionId as string;
    return { client, transport, sid, session: `mcp-${sid}`, used };
  }

  it('initialize creates the session mcp-<MCP session id> of provider mcp, declaring tools with listChanged and (v1.3) tasks', async () => {
    const c = await connect();
    expect(c.sid).toMatch(/^[\x21-\x7e]+$/);
    // v1.3: and the 2025-11-25 tasks utility (mcp-tasks.test.ts).
    expect(c.client.getServerCapabilities()).toEqual({
      tools: { listChanged: true },
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    });
    const s = await f.api.request('GET', `/v1/sessions/${c.session}`);
    expect(s.status).toBe(200);
    expect(s.json.provider).toBe('mcp');
  });

  it('lists every catalog tool with its full schema and annotations, no run_tool, upstream annotations as the server gave them', async () => {
    const c = await connect();
    const { tools } = await c.client.listTools();
    const by = new Map(tools.map((t) => [t.name, t]));
    expect(by.has('run_tool')).toBe(false);
    expect(by.has('find_tools')).toBe(true);
    expect(by.get('calculate')?.inputSchema.properties).toHaveProperty('expression');
    expect(by.get('read_files')?.annotations?.readOnlyHint).toBe(true);
    expect(by.get('run_command')?.annotations?.destructiveHint).toBe(true);
    expect(by.get('edit_file')?.annotations?.destructiveHint).toBe(true);
    expect(by.get('run_command')?.annotations?.readOnlyHint).not.toBe(true);
    // server-everything's own listing, straight from the server.
    const direct = await directEverything();
    try {
      // Tools that run only as MCP tasks are left out of the catalog (API.md "MCP servers").
      const upstream = (await direct.listTools()).tools.filter(
        (t) => (t as { execution?: { taskSupport?: string } }).execution?.taskSupport !== 'required',
      );
      const annotated = upstream.filter((t) => t.annotations && Object.keys(t.annotations).length > 0);
      expect(annotated.length).toBeGreaterThan(0);
      for (const t of annotated) expect(by.get(mcpToolName('everything', t.name))?.annotations).toEqual(t.annotations);
      const echo = upstream.find((t) => t.name === 'echo');
      expect(by.get(ECHO)?.inputSchema.properties).toEqual(echo?.inputSchema.properties);
    } finally {
      await direct.close();
    }
  });

  it('answers tools/call as a round of one call: one text block of JSON, structuredContent, _meta result, history in run = MCP session', async () => {
    const c = await connect();
    const r = await c.client.callTool({
      name: 'calculate',
      arguments: { expression: '6*7' },
      _meta: { 'tool-dispatch/callId': 'calc-1' },
    });
    expect(r.isError).toBe(false);
    expect(JSON.parse(textOf(r))).toEqual({ value: 42 });
    expect(r.structuredContent).toEqual({ value: 42 });
    expect(metaOf(r)).toMatchObject({ id: 'calc-1', status: 'ok' });
    const h = await f.api.request('GET', `/v1/sessions/${c.session}/history`);
    const entry = (h.json.results as Array<Record<string, unknown>>).find((e) => e.id === 'calc-1');
    expect(entry).toMatchObject({ name: 'calculate', status: 'ok', run: c.sid, round: metaOf(r).round });
    // A repeat in the run is deduped (the passes run), and an error status is one text block.
    const again = await c.client.callTool({ name: 'calculate', arguments: { expression: '6*7' } });
    expect(metaOf(again)).toMatchObject({ status: 'deduped', dedupedFrom: 'calc-1' });
    const bad = await c.client.callTool({ name: 'calculate', arguments: { nope: 1 } });
    expect(bad.isError).toBe(true);
    expect(metaOf(bad).status).toBe('invalid');
    expect(bad.content).toHaveLength(1);
  });

  it('passes an upstream MCP tool’s content and structuredContent through untouched', async () => {
    const c = await connect();
    const direct = await directEverything();
    try {
      for (const [name, args] of [
        ['echo', { message: 'through the dispatcher' }],
        ['get-structured-content', { location: 'New York' }],
      ] as const) {
        const mine = await c.client.callTool({ name: mcpToolName('everything', name), arguments: args });
        const theirs = await direct.callTool({ name, arguments: args });
        expect(mine.isError).toBe(false);
        expect(mine.content).toEqual(theirs.content);
        expect(mine.structuredContent).toEqual(theirs.structuredContent);
      }
    } finally {
      await direct.close();
    }
    expect(STRUCTURED).toContain('get-structured-content');
  });

  it('runs the run from _meta["tool-dispatch/run"], and a key reused with a different call is JSON-RPC -32602 naming the conflict', async () => {
    const c = await connect();
    const meta = { 'tool-dispatch/run': 'run-a', 'tool-dispatch/idempotencyKey': 'key-1' };
    const r = await c.client.callTool({ name: 'calculate', arguments: { expression: '1+1' }, _meta: meta });
    expect(metaOf(r)).toMatchObject({ id: 'mcp-key-1', status: 'ok' });
    // The same request again is the same round.
    const retry = await c.client.callTool({ name: 'calculate', arguments: { expression: '1+1' }, _meta: meta });
    expect(metaOf(retry).round).toBe(metaOf(r).round);
    await expect(
      c.client.callTool({ name: 'calculate', arguments: { expression: '2+2' }, _meta: meta }),
    ).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/key-1.*different call/) });
    const h = await f.api.request('GET', `/v1/sessions/${c.session}/history`);
    expect((h.json.results as Array<Record<string, unknown>>).filter((e) => e.run === 'run-a')).toHaveLength(1);
  });

  for (const [label, answer, runs] of [
    ['accept {approve: true} approves', { action: 'accept', content: { approve: true } }, true],
    ['accept {approve: false} denies', { action: 'accept', content: { approve: false } }, false],
    ['decline denies', { action: 'decline' }, false],
    ['cancel denies', { action: 'cancel' }, false],
  ] as const) {
    it(`asks the confirm gate of the client by elicitation/create: ${label}`, async () => {
      const asked: Array<Record<string, unknown>> = [];
      let pending: unknown;
      const c = await connect({
        elicit: async (params) => {
          asked.push(params);
          pending = (await f.api.request('GET', `/v1/sessions/${c.session}/confirmations`)).json.confirmations;
          return answer;
        },
      });
      const file = `gate-${label.replace(/\W+/g, '')}.txt`;
      const r = await c.client.callTool({
        name: 'run_command',
        arguments: { command: `echo ok > ${file}` },
        _meta: { 'tool-dispatch/callId': 'gated' },
      });
      expect(asked).toHaveLength(1);
      expect(asked[0]?.message).toEqual(expect.stringContaining('run_command'));
      expect(asked[0]?.message).toEqual(expect.stringContaining(file));
      expect(asked[0]?.requestedSchema).toEqual({
        type: 'object',
        properties: { approve: { type: 'boolean' }, remember: { type: 'boolean' } },
        required: ['approve'],
      });
      // Pending in the API too while the client was asked.
      expect(pending).toEqual([expect.objectContaining({ callId: 'gated', name: 'run_command' })]);
      expect(metaOf(r).status).toBe(runs ? 'ok' : 'denied');
      expect(existsSync(path.join(f.service.workspace(c.session), file))).toBe(runs);
      // v1.2: who answered is the MCP client, on the approval and on the denial alike.
      const history = (await f.api.request('GET', `/v1/sessions/${c.session}/history`)).json.results;
      type Entry = { id: string; approval?: { by: string }; error?: { details?: { approval?: { by: string } } } };
      const entry = (history as Entry[]).find((e) => e.id === 'gated');
      expect(runs ? entry?.approval?.by : entry?.error?.details?.approval?.by).toBe('mcp-client');
    });
  }

  it('lets the API answer a confirmation the client was asked (first answer wins), and asks nothing of a client without elicitation', async () => {
    let asked = 0;
    const c = await connect({
      elicit: async () => {
        asked++;
        await sleep(60_000); // a person who never answers
        return { action: 'decline' };
      },
    });
    const call = c.client.callTool({ name: 'run_command', arguments: { command: 'echo api' } }, { timeout: 120_000 });
    const pending = await until(
      async () =>
        ((await f.api.request('GET', `/v1/sessions/${c.session}/confirmations`)).json.confirmations as unknown[])[0] as
          | Record<string, unknown>
          | undefined,
      { timeoutMs: 20_000, what: 'the confirmation pending' },
    );
    const answered = await f.api.request('POST', `/v1/sessions/${c.session}/confirmations/${pending.confirmationId}`, {
      approve: true,
    });
    expect(answered.status).toBe(200);
    const r = await call;
    expect(metaOf(r).status).toBe('ok');
    expect(asked).toBe(1);
    // Without the capability: the API alone.
    const plain = await connect();
    const call2 = plain.client.callTool({ name: 'run_command', arguments: { command: 'echo plain' } });
    const p2 = await until(
      async () =>
        (
          (await f.api.request('GET', `/v1/sessions/${plain.session}/confirmations`)).json.confirmations as unknown[]
        )[0] as Record<string, unknown> | undefined,
      { timeoutMs: 20_000, what: 'the confirmation pending' },
    );
    await f.api.request('POST', `/v1/sessions/${plain.session}/confirmations/${p2.confirmationId}`, { approve: false });
    expect(metaOf(await call2).status).toBe('denied');
  });

  it('asks ask_user and an upstream server’s own elicitation of the client, and hands the answers back', async () => {
    const asked: Array<Record<string, unknown>> = [];
    const c = await connect({
      elicit: async (params) => {
        asked.push(params);
        if (String(params.message).includes('Which colour')) return { action: 'accept', content: { answer: 'blue' } };
        return { action: 'accept', content: { name: 'Ada' } };
      },
    });
    const r = await c.client.callTool({
      name: 'ask_user',
      arguments: { question: 'Which colour?', choices: ['red', 'blue'] },
    });
    expect(metaOf(r).status).toBe('ok');
    expect(r.structuredContent).toMatchObject({ answer: 'blue' });
    expect(asked[0]?.requestedSchema).toEqual({
      type: 'object',
      properties: { answer: { type: 'string', enum: ['red', 'blue'] } },
      required: ['answer'],
    });
    const up = await c.client.callTool({ name: ASK, arguments: { message: 'Your name?' } });
    expect(metaOf(up).status).toBe('ok');
    expect(JSON.stringify(up.content)).toContain('Ada');
    expect(asked[1]?.message).toBe('Your name?');
    // A decline of ask_user ends the call error saying the person declined.
    const declining = await connect({ elicit: async () => ({ action: 'decline' }) });
    const d = await declining.client.callTool({ name: 'ask_user', arguments: { question: 'Sure?' } });
    expect(d.isError).toBe(true);
    expect(textOf(d)).toMatch(/declined/);
  });

  it('sends progress at least every 5 s while a call runs, with where it is', async () => {
    const c = await connect();
    await f.api.putSession(c.session, { provider: 'mcp', autoApprove: 'all' });
    const seen: Array<{ progress: number; message?: string | undefined; at: number }> = [];
    const r = await c.client.callTool(
      { name: 'run_command', arguments: { command: 'sleep 6' } },
      { onprogress: (p) => seen.push({ ...p, at: Date.now() }), timeout: 60_000 },
    );
    expect(metaOf(r).status).toBe('ok');
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.map((p) => p.message)).toContain('running');
    for (let i = 1; i < seen.length; i++) expect(seen[i]?.progress).toBeGreaterThan(seen[i - 1]?.progress as number);
  });

  it('ends a call the client aborts (notifications/cancelled) error/cancelled, its command’s process group killed; the run goes on', async () => {
    const c = await connect();
    await f.api.putSession(c.session, { provider: 'mcp', autoApprove: 'all' });
    const ac = new AbortController();
    const marked = markedSeconds(60);
    const call = c.client.callTool(
      {
        name: 'run_command',
        arguments: { command: `sleep ${marked} & echo started > child.pid; wait` },
        _meta: { 'tool-dispatch/callId': 'long' },
      },
      { signal: ac.signal, timeout: 120_000 },
    );
    call.catch(() => undefined);
    const pidFile = path.join(f.service.workspace(c.session), 'child.pid');
    await until(async () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', {
      timeoutMs: 20_000,
      what: 'the command started',
    });
    ac.abort('stop');
    await expect(call).rejects.toBeDefined();
    const entry = await until(
      async () =>
        (
          (await f.api.request('GET', `/v1/sessions/${c.session}/history`)).json.results as Array<
            Record<string, unknown>
          >
        ).find((e) => e.id === 'long'),
      { timeoutMs: 20_000, what: 'the cancelled call in history' },
    );
    expect(entry).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    await until(async () => (pidsWithArg(marked).length === 0 ? true : undefined), {
      timeoutMs: 10_000,
      what: 'the command’s child gone',
    });
    const next = await c.client.callTool({ name: 'calculate', arguments: { expression: '2*3' } });
    expect(metaOf(next).status).toBe('ok');
  });

  it('DELETE /mcp ends the MCP session and cancels its calls in flight; the session id is unknown after (404)', async () => {
    const c = await connect();
    await f.api.putSession(c.session, { provider: 'mcp', autoApprove: 'all' });
    const call = c.client.callTool(
      { name: 'run_command', arguments: { command: 'sleep 60' }, _meta: { 'tool-dispatch/callId': 'doomed' } },
      { timeout: 120_000 },
    );
    call.catch(() => undefined);
    await sleep(1500);
    await c.transport.terminateSession();
    const entry = await until(
      async () =>
        (
          (await f.api.request('GET', `/v1/sessions/${c.session}/history`)).json.results as Array<
            Record<string, unknown>
          >
        ).find((e) => e.id === 'doomed'),
      { timeoutMs: 20_000, what: 'the cancelled call in history' },
    );
    expect(entry).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    const after = await fetch(`${f.service.base}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': c.sid,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(after.status).toBe(404);
  });

  it('acts in the session ?session= names (unknown: 404 in the error shape)', async () => {
    await f.api.putSession('mcp-bound', { provider: 'openai' });
    const c = await connect({ query: '?session=mcp-bound' });
    const { tools } = await c.client.listTools();
    // The session keeps its provider's array: openai's find_tools and run_tool.
    expect(tools.map((t) => t.name).sort()).toEqual(['find_tools', 'run_tool']);
    const r = await c.client.callTool({ name: 'calculate', arguments: { expression: '3*3' } });
    expect(metaOf(r).status).toBe('refused');
    const unknown = await fetch(`${f.service.base}/mcp?session=no-such-session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'session_not_found', message: expect.any(String) } });
  });

  it('sends notifications/tools/list_changed when the catalog changes', async () => {
    let changed = 0;
    const c = await connect({ onListChanged: () => changed++ });
    await sleep(1500); // the listening stream opened
    writeFileSync(toolsFile, JSON.stringify(['extra_9']));
    await until(async () => (changed > 0 ? true : undefined), { timeoutMs: 30_000, what: 'list_changed' });
    const { tools } = await c.client.listTools();
    expect(tools.map((t) => t.name)).toContain(mcpToolName('fake', 'extra_9'));
  });

  if (overRedis(mode)) {
    it('serves one MCP session’s requests alternately on two coordinators, an elicitation answer landing on the other one', async () => {
      const bases = [f.service.base, (second as { base: string }).base];
      let asked = 0;
      const c = await connect({
        bases,
        elicit: async () => {
          asked++;
          return { action: 'accept', content: { approve: true } };
        },
      });
      for (let i = 0; i < 4; i++) {
        const r = await c.client.callTool({ name: 'calculate', arguments: { expression: `${i}+1` } });
        expect(metaOf(r).status).toBe('ok');
      }
      const gated = await c.client.callTool({ name: 'run_command', arguments: { command: 'echo both' } });
      expect(metaOf(gated).status).toBe('ok');
      expect(asked).toBe(1);
      expect(new Set(c.used)).toEqual(new Set(bases));
    });

    it('reaches a call waiting on one coordinator with an approval answered on the other', async () => {
      const c = await connect();
      const call = c.client.callTool({ name: 'run_command', arguments: { command: 'echo elsewhere' } });
      const other = (second as { base: string }).base;
      const pending = await until(
        async () =>
          (
            (await (await fetch(`${other}/v1/sessions/${c.session}/confirmations`)).json()) as {
              confirmations: Array<Record<string, unknown>>;
            }
          ).confirmations[0],
        { timeoutMs: 20_000, what: 'the confirmation pending on the other coordinator' },
      );
      const answered = await fetch(`${other}/v1/sessions/${c.session}/confirmations/${pending.confirmationId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ approve: true }),
      });
      expect(answered.status).toBe(200);
      expect(metaOf(await call).status).toBe('ok');
    });
  }
});

/** A client of server-everything itself (stdio), to compare with what the dispatcher passes on. */
async function directEverything(): Promise<Client> {
  const client = new Client({ name: 'td-test-direct', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' }),
  );
  return client;
}
