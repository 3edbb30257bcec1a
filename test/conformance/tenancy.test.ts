import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { operationsOf, readOpenApiDocument } from '../http/openapi-doc.js';
import { Api, type Call, type Result, rt, uid } from './api.js';
import { describeModes, useService } from './fixture.js';
import { overRedis, REPO_ROOT, sleep, startExtraCoordinator, stopGroup } from './service.js';

// API.md v1.2 "Tenants, tokens and approval grants", against the real processes of each mode.

const TOKENS = {
  a: { token: 'conf-tok-a-backend-0123456789', name: 'a-backend', tenant: 'ta', role: 'backend' },
  b: { token: 'conf-tok-b-backend-0123456789', name: 'b-backend', tenant: 'tb', role: 'backend' },
  ap: { token: 'conf-tok-a-approver-01234567', name: 'a-approver', tenant: 'ta', role: 'approver' },
  ops: { token: 'conf-tok-operator-0123456789', name: 'ops', tenant: '*', role: 'operator' },
} as const;
const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const TOKENS_FILE = path.join(mkdtempSync(path.join(tmpdir(), 'td-conf-tokens-')), 'tokens.json');
writeFileSync(
  TOKENS_FILE,
  JSON.stringify({
    tokens: Object.values(TOKENS).map(({ token, name, tenant, role }) => ({ name, sha256: sha(token), tenant, role })),
  }),
);

describeModes('tenants, tokens and grants', (mode) => {
  const f = useService(mode, { env: { TD_API_TOKENS: TOKENS_FILE } });
  const as = (who: keyof typeof TOKENS, base = f.service.base) => new Api(base, TOKENS[who].token);
  const session = (who: 'a' | 'b' = 'a') => as(who).session(['run_command', 'calculate']);
  const start = (api: Api, s: string, run: string, calls: Call[]) => {
    const p = api.round(s, run, calls);
    p.catch(() => undefined);
    return p;
  };
  /** A confirm-gated call answered by the approver with `body`; its result. */
  async function answered(s: string, run: string, call: Call, body: Parameters<Api['answer']>[2]) {
    const p = start(as('a'), s, run, [call]);
    const [c] = await as('ap').waitPending(s, 1);
    const r = await as('ap').answer(s, c?.confirmationId ?? '', body);
    expect(r.status, r.text).toBe(200);
    return { result: (await p).results[0] as Result, answer: r.json };
  }
  /** A call that must run without asking: no confirmation shows up while it runs. */
  async function unasked(api: Api, s: string, call: Call, run = uid('run')) {
    const p = start(api, s, run, [call]);
    let asked = false;
    let done = false;
    p.finally(() => (done = true)).catch(() => undefined);
    while (!done) {
      const pending = await api.pending(s);
      for (const c of pending) {
        asked = true;
        await api.answer(s, c.confirmationId, { approve: false });
      }
      await sleep(50);
    }
    expect(asked, 'the call asked for approval although a grant covers it').toBe(false);
    return (await p).results[0] as Result;
  }
  /** A call that must ask: its confirmation shows up (it is denied, so the round ends). */
  async function asks(s: string, call: Call, run = uid('run')) {
    const p = start(as('a'), s, run, [call]);
    const [c] = await as('a').waitPending(s, 1);
    expect(c?.callId).toBe(call.id);
    await as('a').answer(s, c?.confirmationId ?? '', { approve: false });
    const r = (await p).results[0] as Result;
    expect(r.status).toBe('denied');
    return r;
  }

  it('every session route of the document is 404 for another tenant’s session; a PUT naming another tenant is 403', async () => {
    const a = await session('a');
    const b = await session('b');
    const fill = (docPath: string, s: string) =>
      docPath.replace(/\{([^}]+)\}/g, (_, name: string) => (name === 'session' ? s : name === 'run' ? 'r1' : 'x1'));
    const problems: string[] = [];
    for (const [method, docPath] of operationsOf(readOpenApiDocument())) {
      if (!docPath.includes('{session}') || method === 'PUT') continue;
      const body = method === 'POST' ? (docPath.endsWith('rounds') ? { calls: [] } : { approve: false }) : undefined;
      for (const [who, other] of [
        ['a', b],
        ['b', a],
      ] as const) {
        const r = await as(who).request(method, fill(docPath, other), body);
        if (r.status !== 404) problems.push(`${who}: ${method} ${fill(docPath, other)} → ${r.status}`);
      }
    }
    expect(problems).toEqual([]);
    expect(
      (await as('a').request('PUT', `/v1/sessions/${uid('s')}`, { provider: 'openai', tenant: 'tb' })).status,
    ).toBe(403);
    expect((await as('ops').request('GET', `/v1/sessions/${b}/history`)).status).toBe(200);
  });

  it('an approver answers (approval.by its name in the result, history and tool.result) and cannot submit', async () => {
    const s = await session();
    const tap = await as('ap').events(s);
    const call = rt('run_command', { command: 'echo by-approver' });
    const { result } = await answered(s, uid('run'), call, { approve: true });
    expect(result.status).toBe('ok');
    expect(result.approval?.by).toBe('a-approver');
    expect(Number.isNaN(Date.parse(result.approval?.at ?? ''))).toBe(false);
    const h = (await as('ap').history(s)).find((e) => e.id === call.id);
    expect(h?.approval).toEqual(result.approval);
    const event = await tap.waitFor((es) => es.find((e) => e.name === 'tool.result' && e.data.id === call.id));
    expect(event.data.approval).toEqual(result.approval);
    tap.close();
    const denied = await answered(s, uid('run'), rt('run_command', { command: 'echo no' }), { approve: false });
    expect(denied.result.error?.details).toMatchObject({ approval: { by: 'a-approver' } });
    expect((await as('ap').request('POST', `/v1/sessions/${s}/runs/r9/rounds`, { calls: [] })).status).toBe(403);
    const auto = await as('a').session(['run_command'], { provider: 'openai', autoApprove: ['run_command'] });
    expect((await as('a').one(auto, rt('run_command', { command: 'echo auto' }))).approval?.by).toBe('auto');
  });

  it('an args grant approves the identical call, asks for other args, and asks again after its TTL', async () => {
    const s = await session();
    const run = uid('run');
    const first = await answered(s, run, rt('run_command', { command: 'echo g', timeoutMs: 5000 }), {
      approve: true,
      grant: { scope: 'args', ttlMs: 4000 },
    });
    const t0 = Date.now();
    expect(first.result.approval?.by).toBe('a-approver');
    const grantId = first.answer.grant?.grantId as string;
    expect(typeof grantId).toBe('string');
    // The same canonical args, keys in another order, in another run of the session.
    const again = await unasked(as('a'), s, rt('run_command', { timeoutMs: 5000, command: 'echo g' }));
    expect(again).toMatchObject({ status: 'ok', approval: { by: `grant:${grantId}` } });
    await asks(s, rt('run_command', { command: 'echo other', timeoutMs: 5000 }));
    const listed = (await as('ap').request('GET', `/v1/sessions/${s}/grants`)).json.grants;
    expect(listed).toEqual([
      expect.objectContaining({ grantId, tool: 'run_command', scope: 'args', createdBy: 'a-approver', uses: 1 }),
    ]);
    expect(Date.now() - t0).toBeLessThan(4000);
    await sleep(Math.max(0, 4500 - (Date.now() - t0)));
    await asks(s, rt('run_command', { command: 'echo g', timeoutMs: 5000 }));
  });

  it('a revoked grant stops at once; a run grant holds in its run only; remember is a tool grant', async () => {
    const s = await session();
    const run = uid('run');
    const made = await answered(s, run, rt('run_command', { command: 'echo r1' }), {
      approve: true,
      grant: { scope: 'tool', run: true },
    });
    const grantId = made.answer.grant?.grantId as string;
    expect((await unasked(as('a'), s, rt('run_command', { command: 'echo r2' }), run)).status).toBe('ok');
    await asks(s, rt('run_command', { command: 'echo r3' }));
    expect((await as('ap').request('DELETE', `/v1/sessions/${s}/grants/${grantId}`)).status).toBe(403);
    expect((await as('a').request('DELETE', `/v1/sessions/${s}/grants/${grantId}`)).status).toBe(200);
    expect((await as('a').request('DELETE', `/v1/sessions/${s}/grants/${grantId}`)).status).toBe(404);
    await asks(s, rt('run_command', { command: 'echo r4' }), run);
    const remembered = await answered(s, uid('run'), rt('run_command', { command: 'echo m' }), {
      approve: true,
      remember: true,
    });
    expect(remembered.answer.grant).toMatchObject({ scope: 'tool', createdBy: 'a-approver' });
    expect(remembered.answer.grant.expiresAt).toBeUndefined();
    const later = await unasked(as('a'), s, rt('run_command', { command: 'echo anything' }));
    expect(later.approval?.by).toBe(`grant:${remembered.answer.grant.grantId}`);
  });

  it('/mcp needs a backend token, and its sessions are in the token’s tenant', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tenancy-test', version: '1' } },
    };
    const headers = { accept: 'application/json, text/event-stream' };
    expect((await as('ap').request('POST', '/mcp', init, headers)).status).toBe(403);
    const opened = await as('a').request('POST', '/mcp', init, headers);
    expect(opened.status, opened.text).toBe(200);
    const mcpSession = opened.headers.get('mcp-session-id') as string;
    const state = await as('a').request('GET', `/v1/sessions/mcp-${mcpSession}`);
    expect(state.json.tenant).toBe('ta');
    expect((await as('b').request('GET', `/v1/sessions/mcp-${mcpSession}`)).status).toBe(404);
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const other = await as('b').request('POST', '/mcp', list, { ...headers, 'mcp-session-id': mcpSession });
    expect(other.status).toBe(404);
    const own = await as('a').request('POST', '/mcp', list, { ...headers, 'mcp-session-id': mcpSession });
    expect(own.status).toBe(200);
    const bound = await as('b').request('POST', `/mcp?session=mcp-${mcpSession}`, init, headers);
    expect(bound.status).toBe(404);
  });

  if (overRedis(mode)) {
    it('the queue dashboard is the operator’s: 403 for a backend or an approver', async () => {
      expect((await as('a').request('GET', '/admin/queues')).status).toBe(403);
      expect((await as('ap').request('GET', '/admin/queues/api/queues')).status).toBe(403);
      expect((await as('ops').request('GET', '/admin/queues')).status).toBe(200);
    });

    it('a grant made on one coordinator applies on another and survives the first one’s SIGKILL', async () => {
      const second = await startExtraCoordinator(f.service, 'coordinator-grants');
      try {
        const s = await session();
        const call = { command: 'echo everywhere' };
        const made = await answered(s, uid('run'), rt('run_command', call), {
          approve: true,
          grant: { scope: 'args' },
        });
        const grantId = made.answer.grant?.grantId as string;
        const onSecond = await unasked(as('a', second.base), s, rt('run_command', call));
        expect(onSecond.approval?.by).toBe(`grant:${grantId}`);
        f.service.coordinator.signal('SIGKILL');
        await f.service.coordinator.exited;
        const afterKill = await unasked(as('a', second.base), s, rt('run_command', call));
        expect(afterKill.approval?.by).toBe(`grant:${grantId}`);
        const grants = (await as('a', second.base).request('GET', `/v1/sessions/${s}/grants`)).json.grants;
        expect(grants[0]).toMatchObject({ grantId, uses: 2 });
      } finally {
        await stopGroup(second.group);
      }
    }, 120_000);
  }
});

describe('TD_API_TOKEN and TD_API_TOKENS', () => {
  const run = (env: Record<string, string>) =>
    spawnSync(path.join(REPO_ROOT, 'bin/tool-dispatch'), ['coordinator', '--port', '0'], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, REDIS_URL: '', ...env },
    });

  it('both set: exit 2 naming both', () => {
    const r = run({ TD_API_TOKEN: 'x'.repeat(20), TD_API_TOKENS: TOKENS_FILE });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/TD_API_TOKEN or TD_API_TOKENS, not both/);
  });

  it.each([
    ['not JSON', '{', /not JSON/],
    [
      'an operator with one tenant',
      JSON.stringify({ tokens: [{ name: 'o', sha256: sha('o'), tenant: 't', role: 'operator' }] }),
      /operator's "tenant" must be "\*"/,
    ],
    [
      'a bad sha256',
      JSON.stringify({ tokens: [{ name: 'o', sha256: 'abc', tenant: 't', role: 'backend' }] }),
      /sha256/,
    ],
    [
      'an unknown role',
      JSON.stringify({ tokens: [{ name: 'o', sha256: sha('o'), tenant: 't', role: 'admin' }] }),
      /role/,
    ],
  ])('a file with %s: exit 2 naming the problem', (_what, text, message) => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'td-bad-tokens-')), 'tokens.json');
    writeFileSync(file, text);
    const r = run({ TD_API_TOKENS: file });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain('TD_API_TOKENS');
  });
});

describe('TD_API_TOKENS re-read on SIGHUP', () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'td-hup-tokens-')), 'tokens.json');
  const write = (names: Array<keyof typeof TOKENS>) =>
    writeFileSync(
      file,
      JSON.stringify({
        tokens: names.map((k) => ({ ...TOKENS[k], sha256: sha(TOKENS[k].token), token: undefined })),
      }),
    );
  write(['a']);
  const f = useService('embedded', { env: { TD_API_TOKENS: file } });

  it('takes a new file at SIGHUP, and keeps the old tokens when the new file is bad', async () => {
    const tools = (who: keyof typeof TOKENS) => new Api(f.service.base, TOKENS[who].token).request('GET', '/v1/tools');
    expect((await tools('a')).status).toBe(200);
    expect((await tools('b')).status).toBe(401);
    write(['b']);
    f.service.coordinator.signal('SIGHUP');
    await f.service.coordinator.waitLine(/TD_API_TOKENS: reloaded/, 10_000);
    expect((await tools('b')).status).toBe(200);
    expect((await tools('a')).status).toBe(401);
    writeFileSync(file, '{ not json');
    f.service.coordinator.signal('SIGHUP');
    await f.service.coordinator.waitLine(/stay in force/, 10_000);
    expect((await tools('b')).status).toBe(200);
  });
});
