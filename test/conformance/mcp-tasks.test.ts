// MCP tasks, the 2025-11-25 utility (API.md v1.3 "MCP tasks"), driven by the official SDK v1
// client (@modelcontextprotocol/sdk 1.32, its experimental tasks API) over /mcp against the real
// processes in the three modes: a task is a stored round, so another connection, the other
// coordinator (distributed and cluster) and the round API all see the same one.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  RELATED_TASK_META_KEY,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { until } from '../support/until.js';
import { Api } from './api.js';
import { describeModes, useService } from './fixture.js';
import { markedSeconds, overRedis, pidsWithArg, startExtraCoordinator, stopGroup } from './service.js';

const TOKENS = {
  a: { token: 'mcptasks-tok-a-backend-0123456789', name: 'a-backend', tenant: 'ta', role: 'backend' },
  b: { token: 'mcptasks-tok-b-backend-0123456789', name: 'b-backend', tenant: 'tb', role: 'backend' },
  ops: { token: 'mcptasks-tok-operator-0123456789', name: 'ops', tenant: '*', role: 'operator' },
} as const;
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const TOKENS_FILE = path.join(mkdtempSync(path.join(tmpdir(), 'td-mcptasks-tokens-')), 'tokens.json');
writeFileSync(
  TOKENS_FILE,
  JSON.stringify({
    tokens: Object.values(TOKENS).map(({ token, name, tenant, role }) => ({ name, sha256: sha(token), tenant, role })),
  }),
);
const RESULT = 'tool-dispatch/result';
const EXT = 'io.modelcontextprotocol/tasks';
/** TD_MCP_TASK_AFTER_MS of the service: a call still running this long becomes an extension task. */
const AFTER_MS = 500;

type Rpc = { result?: Record<string, unknown>; error?: { code: number; message: string } };

/**
 * Our client of the 2026 tasks extension (no SDK has it): stateless 2026-07-28 requests, the
 * extension in each request's capabilities, the standard headers; requests alternate over `bases`.
 */
class ExtClient {
  private turn = 0;
  private id = 0;
  constructor(
    private readonly bases: string[],
    private readonly token: string,
    private readonly query = '',
    private readonly declare = true,
  ) {}

  async rpc(method: string, params: Record<string, unknown>, name?: string): Promise<Rpc> {
    const base = this.bases[this.turn++ % this.bases.length] as string;
    const capabilities = this.declare ? { extensions: { [EXT]: {} } } : {};
    const body = {
      jsonrpc: '2.0',
      id: ++this.id,
      method,
      params: {
        ...params,
        _meta: {
          ...((params._meta as Record<string, unknown>) ?? {}),
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': capabilities,
          'io.modelcontextprotocol/clientInfo': { name: 'td-ext-test', version: '1.0.0' },
        },
      },
    };
    const res = await fetch(`${base}/mcp${this.query}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${this.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': method,
        ...(name !== undefined ? { 'mcp-name': name } : {}),
      },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    const json = text.startsWith('{')
      ? JSON.parse(text)
      : JSON.parse(
          text
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .pop() ?? '{}',
        );
    return json as Rpc;
  }

  call(name: string, args: Record<string, unknown>) {
    return this.rpc('tools/call', { name, arguments: args }, name);
  }
  get(taskId: string) {
    return this.rpc('tasks/get', { taskId }, taskId);
  }
  update(taskId: string, inputResponses: Record<string, unknown>) {
    return this.rpc('tasks/update', { taskId, inputResponses }, taskId);
  }
  cancel(taskId: string) {
    return this.rpc('tasks/cancel', { taskId }, taskId);
  }
}

type Elicit = (params: Record<string, unknown>) => Promise<Record<string, unknown>>;
type Who = keyof typeof TOKENS;

describeModes('MCP tasks (2025-11-25) at /mcp', (mode) => {
  const f = useService(mode, {
    env: { TD_API_TOKENS: TOKENS_FILE, TD_MCP_TASK_AFTER_MS: String(AFTER_MS) },
    token: TOKENS.ops.token,
  });
  let second: Awaited<ReturnType<typeof startExtraCoordinator>> | undefined;
  const clients: Client[] = [];
  /** The other coordinator where there is one (distributed, cluster), else the same. */
  const other = () => second?.base ?? f.service.base;

  beforeAll(async () => {
    if (overRedis(mode)) second = await startExtraCoordinator(f.service, 'coordinator-mcptasks');
  }, 150_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    if (second) await stopGroup(second.group);
  });

  /** An SDK v1 client on /mcp of `base`, as `who`: a new MCP session (its own connection). */
  async function connect(o: { who?: Who; base?: string; elicit?: Elicit } = {}) {
    const client = new Client(
      { name: `td-mcptasks-${mode}`, version: '1.0.0' },
      { capabilities: o.elicit ? { elicitation: { form: {} } } : {} },
    );
    if (o.elicit) {
      const elicit = o.elicit;
      client.setRequestHandler(ElicitRequestSchema, async (req) => (await elicit(req.params)) as never);
    }
    const transport = new StreamableHTTPClientTransport(new URL(`${o.base ?? f.service.base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${TOKENS[o.who ?? 'a'].token}` } },
    });
    await client.connect(transport);
    clients.push(client);
    const session = `mcp-${transport.sessionId}`;
    return { client, session };
  }
  const api = (who: Who = 'a') => new Api(f.service.base, TOKENS[who].token);
  const autoApprove = (session: string) => api().putSession(session, { provider: 'mcp', autoApprove: 'all' });

  /** A tools/call asking for a task: the CreateTaskResult's task. */
  async function createTask(client: Client, name: string, args: Record<string, unknown>, ttl?: number) {
    const r = await client.request(
      { method: 'tools/call', params: { name, arguments: args } },
      CreateTaskResultSchema,
      { task: ttl === undefined ? {} : { ttl } },
    );
    return r.task;
  }

  it('declares tasks and lists every tool with taskSupport optional; a tools/call without a task is as in v1.2', async () => {
    const c = await connect();
    expect(c.client.getServerCapabilities()?.tasks).toMatchObject({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const { tools } = await c.client.listTools();
    expect(tools.length).toBeGreaterThan(3);
    for (const t of tools) expect(t.execution).toEqual({ taskSupport: 'optional' });
    const r = await c.client.callTool({ name: 'calculate', arguments: { expression: '6*7' } });
    expect(r.isError).toBe(false);
    expect(r._meta?.[RESULT]).toMatchObject({ status: 'ok' });
    expect(r._meta?.[RELATED_TASK_META_KEY]).toBeUndefined();
    expect((await c.client.experimental.tasks.listTasks()).tasks).toEqual([]);
  });

  it('creates a task, gets it, and gives its result on a second connection through the other coordinator; lists it; another token finds nothing', async () => {
    const c = await connect();
    await autoApprove(c.session);
    const task = await createTask(c.client, 'run_command', { command: 'sleep 2; echo slept' }, 120_000);
    expect(task).toMatchObject({ status: 'working', ttl: 120_000 });
    expect(Date.parse(task.createdAt)).not.toBeNaN();
    // Stored before the answer: a tasks/get on the other coordinator finds it at once.
    const again = await connect({ base: other() });
    const got = await again.client.experimental.tasks.getTask(task.taskId);
    expect(got).toMatchObject({ taskId: task.taskId, status: 'working' });
    const result = await again.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(false);
    expect(JSON.stringify(result.content)).toContain('slept');
    expect(result._meta?.[RELATED_TASK_META_KEY]).toEqual({ taskId: task.taskId });
    expect((await c.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    // The same round through the round API.
    const meta = result._meta?.[RESULT] as { round: string; id: string };
    const hist = await api().history(c.session);
    expect(hist.find((e) => e.id === meta.id)).toMatchObject({ round: meta.round, status: 'ok' });
    const listed = await again.client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(task.taskId);
    const stranger = await connect({ who: 'b', base: other() });
    await expect(stranger.client.experimental.tasks.getTask(task.taskId)).rejects.toMatchObject({ code: -32602 });
    await expect(
      stranger.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema),
    ).rejects.toMatchObject({ code: -32602 });
    await expect(stranger.client.experimental.tasks.cancelTask(task.taskId)).rejects.toMatchObject({ code: -32602 });
    expect((await stranger.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).not.toContain(
      task.taskId,
    );
  });

  it('is input_required at the confirm gate, and approved through tasks/result’s elicitation', async () => {
    const asked: Array<Record<string, unknown>> = [];
    const c = await connect({
      elicit: async (params) => {
        asked.push(params);
        return { action: 'accept', content: { approve: true } };
      },
    });
    const statuses: string[] = [];
    let result: Record<string, unknown> | undefined;
    for await (const m of c.client.experimental.tasks.callToolStream(
      { name: 'run_command', arguments: { command: 'echo approved-by-elicitation' } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    )) {
      if (m.type === 'taskStatus') statuses.push(m.task.status);
      if (m.type === 'result') result = m.result as Record<string, unknown>;
      if (m.type === 'error') throw m.error;
    }
    expect(statuses).toContain('input_required');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({
      message: expect.stringContaining('run_command'),
      requestedSchema: { required: ['approve'] },
    });
    expect(asked[0]?._meta).toMatchObject({ [RELATED_TASK_META_KEY]: { taskId: expect.any(String) } });
    expect(result?.isError).toBe(false);
    expect(JSON.stringify(result?.content)).toContain('approved-by-elicitation');
    const id = ((result?._meta ?? {}) as Record<string, Record<string, unknown>>)[RESULT]?.id;
    expect((await api().history(c.session)).find((e) => e.id === id)?.approval).toMatchObject({ by: 'mcp-client' });
  });

  it('is input_required at the confirm gate, and approved through the API; another connection gets the result', async () => {
    const c = await connect();
    const task = await createTask(c.client, 'run_command', { command: 'echo approved-by-api' });
    const waiting = await until(
      async () => {
        const t = await c.client.experimental.tasks.getTask(task.taskId);
        return t.status === 'input_required' ? t : undefined;
      },
      { timeoutMs: 20_000, what: 'the task input_required' },
    );
    expect(waiting.statusMessage).toBe('waiting for approval');
    const pending = (await api().request('GET', `/v1/sessions/${c.session}/confirmations`)).json
      .confirmations as Array<{
      confirmationId: string;
    }>;
    expect(pending).toHaveLength(1);
    const answered = await api().request(
      'POST',
      `/v1/sessions/${c.session}/confirmations/${pending[0]?.confirmationId}`,
      { approve: true },
    );
    expect(answered.status).toBe(200);
    const again = await connect({ base: other() });
    const result = await again.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(false);
    expect(JSON.stringify(result.content)).toContain('approved-by-api');
    expect((await again.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
  });

  it('is input_required while ask_user waits, and answered through tasks/result’s elicitation on the other coordinator', async () => {
    const asked: Array<Record<string, unknown>> = [];
    const c = await connect();
    const task = await createTask(c.client, 'ask_user', { question: 'Which colour?', choices: ['red', 'teal'] });
    const waiting = await until(
      async () => {
        const t = await c.client.experimental.tasks.getTask(task.taskId);
        return t.status === 'input_required' ? t : undefined;
      },
      { timeoutMs: 20_000, what: 'the task input_required' },
    );
    expect(waiting.statusMessage).toBe('waiting for an answer');
    // Another token posting an answer under the task's elicitation id: dropped, the question still open.
    const [input] = (await api().request('GET', `/v1/sessions/${c.session}/inputs`)).json.inputs as Array<{
      inputId: string;
    }>;
    const stranger = await connect({ who: 'b', base: other() });
    const forged = await fetch(`${other()}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKENS.b.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': stranger.session.slice('mcp-'.length),
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: `td-task:${task.taskId}:input:${input?.inputId}`,
        result: { action: 'accept', content: { answer: 'red' } },
      }),
    });
    expect(forged.status).toBe(202);
    const still = (await api().request('GET', `/v1/sessions/${c.session}/inputs`)).json.inputs as unknown[];
    expect(still).toHaveLength(1);
    const answering = await connect({
      base: other(),
      elicit: async (params) => {
        asked.push(params);
        return { action: 'accept', content: { answer: 'teal' } };
      },
    });
    const result = await answering.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ message: expect.stringContaining('Which colour?') });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({ answer: 'teal' });
    expect((await c.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
  });

  it('cancels a task: its command’s processes gone, the task cancelled, its result the cancelled call', async () => {
    const c = await connect();
    await autoApprove(c.session);
    const marked = markedSeconds(120);
    const task = await createTask(c.client, 'run_command', {
      command: `sleep ${marked} & echo started > child.pid; wait`,
    });
    const pidFile = path.join(f.service.workspace(c.session, TOKENS.a.tenant), 'child.pid');
    await until(async () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', {
      timeoutMs: 20_000,
      what: 'the command started',
    });
    expect(pidsWithArg(marked).length).toBeGreaterThan(0);
    const viaOther = await connect({ base: other() });
    const cancelled = await viaOther.client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    await until(async () => (pidsWithArg(marked).length === 0 ? true : undefined), {
      timeoutMs: 10_000,
      what: 'the command’s processes gone',
    });
    expect((await c.client.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
    const result = await c.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(result._meta?.[RESULT]).toMatchObject({ error: { code: 'cancelled' } });
    // A terminal task cannot be cancelled again.
    await expect(c.client.experimental.tasks.cancelTask(task.taskId)).rejects.toMatchObject({ code: -32602 });
  });

  if (overRedis(mode))
    it('a task whose accepting coordinator is SIGKILLed mid-call: another finishes its round, and gives its result', async () => {
      const third = await startExtraCoordinator(f.service, 'coordinator-mcptasks-killed');
      try {
        const c = await connect({ base: third.base });
        await autoApprove(c.session);
        const task = await createTask(c.client, 'run_command', { command: 'sleep 3; echo survived' });
        await until(
          async () =>
            (await c.client.experimental.tasks.getTask(task.taskId)).statusMessage === 'running' ? true : undefined,
          { timeoutMs: 30_000, what: 'the task running' },
        );
        third.group.signal('SIGKILL');
        await third.group.exited;
        const again = await connect();
        const result = await again.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, {
          timeout: 120_000,
        });
        expect(result.isError).toBe(false);
        expect(JSON.stringify(result.content)).toContain('survived');
        expect((await again.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
      } finally {
        await stopGroup(third.group);
      }
    }, 180_000);

  it('forgets a task its ttl after it ended', async () => {
    const c = await connect();
    const task = await createTask(c.client, 'calculate', { expression: '2+3' }, 1500);
    expect(task.ttl).toBe(1500);
    const result = await c.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(JSON.stringify(result.content)).toContain('5');
    expect((await c.client.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
    await until(
      async () =>
        c.client.experimental.tasks.getTask(task.taskId).then(
          () => undefined,
          (e: { code?: number }) => (e.code === -32602 ? true : undefined),
        ),
      { timeoutMs: 20_000, what: 'the task forgotten' },
    );
    expect((await c.client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).not.toContain(task.taskId);
  });

  // The 2026 extension, with our client; its requests alternate over the coordinators.
  const bases = () => (second ? [f.service.base, second.base] : [f.service.base]);
  const ext = (who: Who = 'a', query = '', declare = true) => new ExtClient(bases(), TOKENS[who].token, query, declare);
  async function untilStatus(c: ExtClient, taskId: string, status: string) {
    return until(
      async () => {
        const r = await c.get(taskId);
        if (r.error) throw new Error(`tasks/get: ${r.error.message}`);
        return r.result?.status === status ? r.result : undefined;
      },
      { timeoutMs: 30_000, what: `the task ${status}` },
    );
  }

  it('2026 extension: a quick call answers its result; one running past TD_MCP_TASK_AFTER_MS is a task, its result inlined by tasks/get once completed, on either coordinator', async () => {
    await api().putSession('mcp-a-backend', { provider: 'mcp', autoApprove: 'all' });
    const c = ext();
    const quick = await c.call('calculate', { expression: '20+22' });
    expect(quick.result).toMatchObject({ resultType: 'complete', isError: false });
    expect(quick.result?.taskId).toBeUndefined();
    const created = await c.call('run_command', { command: 'sleep 3; echo ext-slept' });
    expect(created.error).toBeUndefined();
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: expect.any(Number) });
    const taskId = created.result?.taskId as string;
    // Durable before the answer: the next request (the other coordinator) finds it.
    const first = await c.get(taskId);
    expect(first.result).toMatchObject({ resultType: 'complete', taskId, status: 'working' });
    const done = await untilStatus(c, taskId, 'completed');
    const result = done.result as Record<string, unknown>;
    expect(result.isError).toBe(false);
    expect(JSON.stringify(result.content)).toContain('ext-slept');
    // Another token: not found; a client without the extension: the missing capability.
    expect((await ext('b').get(taskId)).error?.code).toBe(-32602);
    expect((await ext('a', '', false).get(taskId)).error?.code).toBe(-32021);
    // A client that declares no extension gets the v1.2 answer, however long the call.
    const plain = await ext('a', '', false).call('run_command', { command: 'sleep 1; echo plain' });
    expect(plain.result).toMatchObject({ isError: false });
    expect(plain.result?.taskId).toBeUndefined();
  });

  it('2026 extension: a call at the confirm gate is an input_required task at once; tasks/update with the approval lets it run', async () => {
    const session = `ext-gate-${mode}`;
    await api().putSession(session, { provider: 'mcp' });
    const c = ext('a', `?session=${session}`);
    const created = await c.call('run_command', { command: 'echo ext-approved' });
    expect(created.error).toBeUndefined();
    expect(created.result).toMatchObject({ resultType: 'task', status: 'input_required' });
    const taskId = created.result?.taskId as string;
    const got = await c.get(taskId);
    const requests = got.result?.inputRequests as Record<string, { method: string; params: Record<string, unknown> }>;
    const keys = Object.keys(requests);
    expect(keys).toHaveLength(1);
    expect(requests[keys[0] as string]).toMatchObject({
      method: 'elicitation/create',
      params: { message: expect.stringContaining('run_command'), requestedSchema: { required: ['approve'] } },
    });
    const ack = await c.update(taskId, { [keys[0] as string]: { action: 'accept', content: { approve: true } } });
    expect(ack.result).toMatchObject({ resultType: 'complete' });
    const done = await untilStatus(c, taskId, 'completed');
    expect(JSON.stringify((done.result as Record<string, unknown>).content)).toContain('ext-approved');
    const hist = await api().history(session);
    expect(hist.find((e) => e.name === 'run_command')?.approval).toMatchObject({ by: 'mcp-client' });
  });

  it('2026 extension: ask_user is an input_required task at once; tasks/update with the answer completes it', async () => {
    const session = `ext-ask-${mode}`;
    await api().putSession(session, { provider: 'mcp' });
    const c = ext('a', `?session=${session}`);
    const created = await c.call('ask_user', { question: 'Which colour?', choices: ['red', 'teal'] });
    expect(created.error).toBeUndefined();
    expect(created.result).toMatchObject({ resultType: 'task', status: 'input_required' });
    const taskId = created.result?.taskId as string;
    const got = await c.get(taskId);
    const requests = got.result?.inputRequests as Record<string, { method: string; params: Record<string, unknown> }>;
    const keys = Object.keys(requests);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/^td-input:/);
    expect(requests[keys[0] as string]).toMatchObject({
      method: 'elicitation/create',
      params: { message: expect.stringContaining('Which colour?'), requestedSchema: { required: ['answer'] } },
    });
    // Another token cannot answer it.
    expect(
      (await ext('b').update(taskId, { [keys[0] as string]: { action: 'accept', content: { answer: 'red' } } })).error
        ?.code,
    ).toBe(-32602);
    const ack = await c.update(taskId, { [keys[0] as string]: { action: 'accept', content: { answer: 'teal' } } });
    expect(ack.result).toMatchObject({ resultType: 'complete' });
    const done = await untilStatus(c, taskId, 'completed');
    expect((done.result as Record<string, unknown>).structuredContent).toMatchObject({ answer: 'teal' });
  });

  it('2026 extension: tasks/cancel ends the call error/cancelled, its command’s processes gone', async () => {
    await api().putSession('mcp-a-backend', { provider: 'mcp', autoApprove: 'all' });
    const c = ext();
    const marked = markedSeconds(120);
    const created = await c.call('run_command', { command: `sleep ${marked}; echo never` });
    expect(created.result).toMatchObject({ resultType: 'task' });
    const taskId = created.result?.taskId as string;
    await until(async () => (pidsWithArg(marked).length > 0 ? true : undefined), {
      timeoutMs: 20_000,
      what: 'the command started',
    });
    const ack = await c.cancel(taskId);
    expect(ack.result).toMatchObject({ resultType: 'complete' });
    await untilStatus(c, taskId, 'cancelled');
    await until(async () => (pidsWithArg(marked).length === 0 ? true : undefined), {
      timeoutMs: 10_000,
      what: 'the command’s processes gone',
    });
    const hist = await api().history('mcp-a-backend');
    expect(hist.filter((e) => e.name === 'run_command' && e.error?.code === 'cancelled')).not.toHaveLength(0);
  });
});
