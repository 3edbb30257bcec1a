import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TdClient } from '@tool-dispatch/client';
import { loadTokenTable } from '@tool-dispatch/coordinator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, rt, sleep, startHarness, uid } from './harness.js';
import { operationsOf, readOpenApiDocument, routeShape, servedRoutes } from './openapi-doc.js';

// API.md v1.2 "Tenants, tokens and approval grants": TD_API_TOKENS' tenants and roles, checked
// over every route of the OpenAPI document so that a new route cannot forget them.

const TOKENS = {
  aBackend: { token: 'tok-a-backend-0123456789', name: 'a-backend', tenant: 'ta', role: 'backend' },
  bBackend: { token: 'tok-b-backend-0123456789', name: 'b-backend', tenant: 'tb', role: 'backend' },
  aApprover: { token: 'tok-a-approver-012345678', name: 'a-approver', tenant: 'ta', role: 'approver' },
  ops: { token: 'tok-operator-0123456789ab', name: 'ops', tenant: '*', role: 'operator' },
} as const;
type Who = keyof typeof TOKENS;
const sha = (t: string) => createHash('sha256').update(t).digest('hex');

let h: Harness;
beforeAll(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'td-tokens-'));
  const file = path.join(dir, 'tokens.json');
  const tokens = Object.values(TOKENS).map(({ token, name, tenant, role }) => ({
    name,
    sha256: sha(token),
    tenant,
    role,
  }));
  writeFileSync(file, JSON.stringify({ tokens }));
  // A stand-in for the queue dashboard (mounted in distributed mode only): an /admin route.
  const extraRoutes = async (app: Harness['app']) => {
    app.get('/admin/queues', async () => ({ dashboard: true }));
  };
  h = await startHarness({ server: { apiTokens: loadTokenTable(file), extraRoutes } });
});
afterAll(() => h.close());

const as = (who: Who, method: string, p: string, body?: unknown) =>
  h.api(method, p, body, { authorization: `Bearer ${TOKENS[who].token}` });

async function sessionOf(who: Who, body: Record<string, unknown> = {}) {
  const s = uid('s');
  const r = await as(who, 'PUT', `/v1/sessions/${s}`, { provider: 'openai', ...body });
  expect(r.status, r.text).toBe(200);
  return s;
}

/** A request for every operation of the document, its path parameters filled in. */
function documentRequests(session: string) {
  const fill: Record<string, string> = { session, run: 'r1', confirmationId: 'cf-x', inputId: 'in-x', grantId: 'gr-x' };
  const bodies: Record<string, unknown> = {
    'PUT /v1/sessions/{session}': { provider: 'openai' },
    'POST /v1/sessions/{session}/runs/{run}/rounds': { calls: [] },
    'POST /v1/sessions/{session}/confirmations/{confirmationId}': { approve: false },
    'POST /v1/sessions/{session}/inputs/{inputId}': { output: 1 },
  };
  return operationsOf(readOpenApiDocument()).map(([method, docPath]) => ({
    method,
    docPath,
    url: docPath.replace(/\{([^}]+)\}/g, (_, name: string) => fill[name] ?? 'x'),
    body: bodies[`${method} ${docPath}`],
  }));
}

describe('TD_API_TOKENS: tenants', () => {
  it('every route of the document that names a session answers 404 for another tenant’s session', async () => {
    const a = await sessionOf('aBackend');
    const b = await sessionOf('bBackend');
    const withSession = documentRequests('').filter((r) => r.docPath.includes('{session}'));
    expect(withSession.length).toBeGreaterThanOrEqual(11);
    const problems: string[] = [];
    for (const [who, other] of [
      ['bBackend', a],
      ['aBackend', b],
      ['aApprover', b],
    ] as const) {
      for (const r of documentRequests(other).filter((x) => x.docPath.includes('{session}'))) {
        if (r.method === 'PUT') continue; // a PUT of another tenant's session: below
        const answer = await as(who, r.method, r.url, r.body);
        if (answer.status !== 404 && !(who === 'aApprover' && answer.status === 403))
          problems.push(`${who}: ${r.method} ${r.url} → ${answer.status}`);
        else if (answer.status === 404) expect(answer.json.error.code).toBe('session_not_found');
      }
    }
    expect(problems).toEqual([]);
  });

  it('the document lists every session route the server serves, so the table above covers them', () => {
    const documented = new Set(documentRequests('').map((r) => `${r.method} ${routeShape(r.docPath)}`));
    const served = servedRoutes(h.app)
      .filter((r) => r.path.includes(':session') && !r.path.startsWith('/inbox/'))
      .map((r) => `${r.method} ${routeShape(r.path)}`);
    expect(served.filter((r) => !documented.has(r))).toEqual([]);
  });

  it('every session route of the inbox (its page’s API, not the document’s) answers 404 for another tenant’s session', async () => {
    const b = await sessionOf('bBackend');
    const inboxRoutes = servedRoutes(h.app).filter((r) => r.path.startsWith('/inbox/') && r.path.includes(':session'));
    expect(inboxRoutes.length).toBeGreaterThanOrEqual(3);
    const problems: string[] = [];
    for (const who of ['aBackend', 'aApprover'] as const) {
      for (const r of inboxRoutes) {
        const url = r.path.replace(/:([a-z]+)/g, (_, name: string) => (name === 'session' ? b : 'x1'));
        const body = r.method === 'POST' ? (url.includes('/inputs/') ? { output: 1 } : { approve: true }) : undefined;
        const answer = await as(who, r.method, url, body);
        if (answer.status !== 404 || answer.json.error.code !== 'session_not_found')
          problems.push(`${who}: ${r.method} ${url} → ${answer.status} ${answer.text}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('a PUT naming another tenant is 403; naming none puts the session in the token’s tenant', async () => {
    const fresh = uid('s');
    const named = await as('aBackend', 'PUT', `/v1/sessions/${fresh}`, { provider: 'openai', tenant: 'tb' });
    expect(named.status).toBe(403);
    expect(named.json.error.code).toBe('forbidden');
    expect((await as('aBackend', 'GET', `/v1/sessions/${fresh}`)).status).toBe(404);
    const a = await sessionOf('aBackend');
    expect((await as('aBackend', 'GET', `/v1/sessions/${a}`)).json.tenant).toBe('ta');
    expect((await as('aBackend', 'PUT', `/v1/sessions/${a}`, { provider: 'openai', tenant: 'tb' })).status).toBe(403);
    // B cannot take A's session over by PUTting it without a tenant.
    expect((await as('bBackend', 'PUT', `/v1/sessions/${a}`, { provider: 'openai' })).status).toBe(404);
    expect((await as('aBackend', 'GET', `/v1/sessions/${a}`)).json.tenant).toBe('ta');
  });

  it('an operator sees every tenant’s sessions; no token or an unknown one is 401', async () => {
    const a = await sessionOf('aBackend');
    const b = await sessionOf('bBackend');
    for (const s of [a, b]) expect((await as('ops', 'GET', `/v1/sessions/${s}/history`)).status).toBe(200);
    expect((await h.api('GET', `/v1/sessions/${a}`)).status).toBe(401);
    expect(
      (await h.api('GET', `/v1/sessions/${a}`, undefined, { authorization: 'Bearer tok-a-backend-01234567' })).status,
    ).toBe(401);
  });
});

/** The roles API.md gives each operation: approver reads and answers only; /admin and /mcp are not theirs. */
function approverMay(method: string, docPath: string): boolean {
  const allowed = [
    'GET /v1/sessions/{session}',
    'GET /v1/sessions/{session}/history',
    'GET /v1/sessions/{session}/events',
    'GET /v1/sessions/{session}/confirmations',
    'POST /v1/sessions/{session}/confirmations/{confirmationId}',
    'GET /v1/sessions/{session}/inputs',
    'POST /v1/sessions/{session}/inputs/{inputId}',
    'GET /v1/sessions/{session}/grants',
    'GET /inbox',
  ];
  return allowed.includes(`${method} ${docPath}`);
}

describe('TD_API_TOKENS: roles', () => {
  it('an approver gets 403 on every route of the document but the reads and answers', async () => {
    const a = await sessionOf('aBackend');
    const problems: string[] = [];
    for (const r of documentRequests(a)) {
      if (['/healthz', '/readyz', '/metrics', '/openapi.json'].includes(r.docPath)) continue;
      if (r.docPath.endsWith('/events')) continue; // a stream: checked below
      const answer = await as('aApprover', r.method, r.url, r.body);
      const may = approverMay(r.method, r.docPath);
      if (may ? answer.status === 403 || answer.status === 401 : answer.status !== 403)
        problems.push(`${r.method} ${r.url} → ${answer.status} (approver ${may ? 'may' : 'may not'})`);
    }
    expect(problems).toEqual([]);
  });

  it('the document’s x-td-roles and docs/api.md’s roles table say what the server enforces, for every route', () => {
    const table = new Map<string, string[]>();
    const api = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    for (const m of api.matchAll(/^\| `(GET|PUT|POST|DELETE) (\/[^`]+)`[^|]*\|([^|]*)\|([^|]*)\|([^|]*)\|$/gm)) {
      const roles = ['backend', 'approver', 'operator'].filter((_, i) => (m[3 + i] ?? '').includes('✓'));
      table.set(`${m[1]} ${routeShape(m[2] ?? '')}`, roles);
    }
    const problems: string[] = [];
    for (const [method, docPath, op] of operationsOf(readOpenApiDocument())) {
      if (!docPath.startsWith('/v1/')) continue;
      const roles = (op as { 'x-td-roles'?: string[] })['x-td-roles'];
      const enforced = ['backend', 'operator', ...(approverMay(method, docPath) ? ['approver'] : [])];
      if (!roles || [...roles].sort().join() !== enforced.sort().join())
        problems.push(`${method} ${docPath}: x-td-roles ${JSON.stringify(roles)}, enforced ${enforced.join()}`);
      const row = table.get(`${method} ${routeShape(docPath)}`);
      if (!row || row.sort().join() !== enforced.sort().join())
        problems.push(`${method} ${docPath}: docs/api.md's table ${JSON.stringify(row)}, enforced ${enforced.join()}`);
    }
    expect(problems).toEqual([]);
  });

  it('an approver answers a confirmation and the backend’s call runs; it cannot submit a round', async () => {
    const a = await sessionOf('aBackend');
    await as('aBackend', 'POST', `/v1/sessions/${a}/runs/r0/rounds`, {
      calls: [{ id: 'f', name: 'find_tools', args: { names: ['run_command'] } }],
    });
    const call = rt('run_command', { command: 'echo approved' });
    const round = as('aBackend', 'POST', `/v1/sessions/${a}/runs/r1/rounds`, { calls: [call] });
    let pending: Array<{ confirmationId: string }> = [];
    for (let i = 0; i < 250 && pending.length === 0; i++) {
      pending = (await as('aApprover', 'GET', `/v1/sessions/${a}/confirmations`)).json.confirmations;
      if (pending.length === 0) await sleep(20);
    }
    const answered = await as('aApprover', 'POST', `/v1/sessions/${a}/confirmations/${pending[0]?.confirmationId}`, {
      approve: true,
    });
    expect(answered.status).toBe(200);
    const result = (await round).json.results[0];
    expect(result.status).toBe('ok');
    expect(result.approval).toMatchObject({ by: 'a-approver' });
    const submit = await as('aApprover', 'POST', `/v1/sessions/${a}/runs/r2/rounds`, { calls: [] });
    expect(submit.status).toBe(403);
    expect(submit.json.error.code).toBe('forbidden');
    expect((await as('aApprover', 'PUT', `/v1/sessions/${a}`, { provider: 'openai' })).status).toBe(403);
    expect((await as('aApprover', 'DELETE', `/v1/sessions/${a}/runs/r1`)).status).toBe(403);
  });

  it('a backend may not open /admin/queues; an operator may; an unknown path stays 404 for everybody', async () => {
    expect((await as('aBackend', 'GET', '/admin/queues')).status).toBe(403);
    expect((await as('aApprover', 'GET', '/admin/queues')).status).toBe(403);
    expect((await as('ops', 'GET', '/admin/queues')).status).toBe(200);
    expect((await as('aBackend', 'GET', '/v1/nothing-here')).status).toBe(404);
  });
});

describe('the typed client and grants', () => {
  it('answers with a grant, lists it, sees it used, and revokes it', async () => {
    const td = new TdClient({ baseUrl: h.base, token: TOKENS.aBackend.token });
    const s = await sessionOf('aBackend');
    await td.submitRound(s, 'r0', [{ id: 'f', name: 'find_tools', args: { names: ['run_command'] } }]);
    const call = rt('run_command', { command: 'echo typed' });
    const round = td.submitRound(s, 'r1', [call]);
    let pending: Awaited<ReturnType<TdClient['confirmations']>> = [];
    for (let i = 0; i < 250 && pending.length === 0; i++) {
      pending = await td.confirmations(s);
      if (pending.length === 0) await sleep(20);
    }
    const answer = await td.answerConfirmation(s, pending[0]?.confirmationId ?? '', {
      approve: true,
      grant: { scope: 'args', run: true },
    });
    expect(answer.grant).toMatchObject({
      tool: 'run_command',
      scope: 'args',
      run: 'r1',
      createdBy: 'a-backend',
      uses: 0,
    });
    expect((await round).results[0]?.approval?.by).toBe('a-backend');
    const again = await td.submitRound(s, 'r1', [rt('run_command', { command: 'echo typed' })]);
    expect(again.results[0]?.approval?.by).toBe(`grant:${answer.grant?.grantId}`);
    expect((await td.grants(s))[0]).toMatchObject({ grantId: answer.grant?.grantId, uses: 1 });
    await td.revokeGrant(s, answer.grant?.grantId ?? '');
    expect(await td.grants(s)).toEqual([]);
    await expect(td.revokeGrant(s, answer.grant?.grantId ?? '')).rejects.toMatchObject({ status: 404 });
  });
});
