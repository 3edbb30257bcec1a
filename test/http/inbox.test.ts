// The approvals inbox's HTTP side on an embedded coordinator (a real server on loopback): the
// login form and its cookie, the page and its files under the dashboard's CSP, the live stream
// (snapshot, asked, gone) and the answers, for a token's tenant only; open without tokens.
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadTokenTable } from '@tool-dispatch/coordinator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadEvent, readEventStream } from '../support/sse.js';
import { until } from '../support/until.js';
import { type Harness, startHarness } from './harness.js';

const TOKENS = {
  alice: { token: 'tok-inbox-http-alice-012345', tenant: 'ta', role: 'approver' },
  backA: { token: 'tok-inbox-http-back-a-01234', tenant: 'ta', role: 'backend' },
  backB: { token: 'tok-inbox-http-back-b-01234', tenant: 'tb', role: 'backend' },
} as const;
const bearer = (who: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[who].token}` });

function tokensFile(): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'td-inbox-http-')), 'tokens.json');
  const tokens = Object.entries(TOKENS).map(([name, t]) => ({
    name,
    sha256: createHash('sha256').update(t.token).digest('hex'),
    tenant: t.tenant,
    role: t.role,
  }));
  writeFileSync(file, JSON.stringify({ tokens }));
  return file;
}

/** Events of an open inbox stream, as they arrive; `close` ends it. */
async function openStream(base: string, headers: Record<string, string>) {
  const abort = new AbortController();
  const res = await fetch(`${base}/inbox/api/stream`, { headers, signal: abort.signal });
  const events: ReadEvent[] = [];
  void readEventStream(res.body, { onText: () => {}, onEvent: (e) => events.push(e) });
  const waitFor = (check: (e: ReadEvent[]) => boolean) =>
    until(() => check(events), { what: () => `an inbox stream event (heard: ${JSON.stringify(events)})` });
  return { res, events, waitFor, close: () => abort.abort() };
}

async function logIn(base: string, token: string): Promise<{ status: number; cookie: string; location: string }> {
  const res = await fetch(`${base}/inbox/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${encodeURIComponent(token)}`,
    redirect: 'manual',
  });
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  return { status: res.status, cookie, location: res.headers.get('location') ?? '' };
}

describe('the inbox with TD_API_TOKENS', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ server: { apiTokens: loadTokenTable(tokensFile()) } });
    for (const [session, who] of [
      ['sa', 'backA'],
      ['sb', 'backB'],
    ] as const)
      expect((await h.api('PUT', `/v1/sessions/${session}`, { provider: 'mcp' }, bearer(who))).status).toBe(200);
  });
  afterAll(() => h.close());

  it('sends a browser to the login form, answers a script 401, and gives a token a cookie naming it', async () => {
    const page = await fetch(`${h.base}/inbox/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
    expect([page.status, page.headers.get('location')]).toEqual([303, '/inbox/login']);
    expect((await fetch(`${h.base}/inbox/api/stream`)).status).toBe(401);
    expect((await logIn(h.base, 'nope')).status).toBe(401);
    const login = await logIn(h.base, TOKENS.alice.token);
    expect([login.status, login.location]).toEqual([303, '/inbox/']);
    expect(login.cookie).toMatch(/^td_inbox=v1\./);
    const shell = await fetch(`${h.base}/inbox/`, { headers: { cookie: login.cookie } });
    expect(shell.status).toBe(200);
    expect(shell.headers.get('content-security-policy')).toMatch(/default-src 'self'; script-src 'self'/);
    expect(await shell.text()).toContain('<script src="/inbox/assets/inbox.js" defer></script>');
    const script = await fetch(`${h.base}/inbox/assets/inbox.js`, { headers: { cookie: login.cookie } });
    expect([script.status, script.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
    expect((await fetch(`${h.base}/inbox/assets/x.js`, { headers: { cookie: login.cookie } })).status).toBe(404);
  });

  it('refuses a login cookie with a byte of its MAC, issue time or name changed, or its MAC spelled another way', async () => {
    const { cookie } = await logIn(h.base, TOKENS.alice.token);
    const page = async (c: string) => (await fetch(`${h.base}/inbox/`, { headers: { cookie: c } })).status;
    expect(await page(cookie)).toBe(200);
    const [v, issued, name, mac] = cookie.slice('td_inbox='.length).split('.') as [string, string, string, string];
    const flip = (encoded: string, at: number) => {
      const bytes = Buffer.from(encoded, 'base64url');
      bytes[at] = (bytes[at] as number) ^ 0x01;
      return bytes.toString('base64url');
    };
    const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelled = `${mac.slice(0, -1)}${B64URL[B64URL.indexOf(mac.at(-1) as string) | 1]}`;
    expect(Buffer.from(respelled, 'base64url').equals(Buffer.from(mac, 'base64url'))).toBe(true);
    for (const forged of [
      `${v}.${issued}.${name}.${flip(mac, 0)}`,
      `${v}.${issued}.${name}.${flip(mac, 31)}`,
      `${v}.${Number(issued) - 1}.${name}.${mac}`,
      `${v}.${issued}.${flip(name, 0)}.${mac}`,
      `${v}.${issued}.${name}.${respelled}`,
    ])
      expect(await page(`td_inbox=${forged}`), forged).toBe(401);
  });

  it('streams its tenant’s confirmations as they are asked and their going when answered, and takes answers with a grant', async () => {
    const { cookie } = await logIn(h.base, TOKENS.alice.token);
    const stream = await openStream(h.base, { cookie });
    await stream.waitFor((e) => e[0]?.name === 'snapshot');
    expect(stream.events[0]?.data).toMatchObject({ items: [], who: { name: 'alice', tenant: 'ta', role: 'approver' } });
    const call = { id: 'c1', name: 'run_command', args: { command: 'echo hi' } };
    const other = h.api('POST', '/v1/sessions/sb/runs/r1/rounds', { calls: [call] }, bearer('backB'));
    const mine = h.api('POST', '/v1/sessions/sa/runs/r1/rounds', { calls: [call] }, bearer('backA'));
    await stream.waitFor((e) => e.some((x) => x.name === 'asked'));
    const asked = stream.events.find((x) => x.name === 'asked')?.data as { id: string; session: string };
    expect(asked).toMatchObject({ session: 'sa', tenant: 'ta', display: { kind: 'shell', command: 'echo hi' } });
    const answer = await h.api(
      'POST',
      `/inbox/api/sessions/sa/confirmations/${asked.id}`,
      { approve: true, grant: { scope: 'args', run: true, ttlMs: 60_000 } },
      { cookie },
    );
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.grant).toMatchObject({ scope: 'args', run: 'r1', createdBy: 'alice' });
    await stream.waitFor((e) => e.some((x) => x.name === 'gone'));
    expect((await mine).json.results[0]).toMatchObject({ status: 'ok', approval: { by: 'alice' } });
    const pending = await h.api('GET', '/v1/sessions/sb/confirmations', undefined, bearer('backB'));
    const theirs = pending.json.confirmations[0].confirmationId as string;
    const refused = await h.api(
      'POST',
      `/inbox/api/sessions/sb/confirmations/${theirs}`,
      { approve: true },
      { cookie },
    );
    expect(refused.status).toBe(404);
    await h.api('POST', `/v1/sessions/sb/confirmations/${theirs}`, { approve: false }, bearer('backB'));
    await other;
    expect(stream.events.filter((x) => (x.data as { session?: string }).session === 'sb')).toEqual([]);
    stream.close();
  });

  it('shows a run’s recent history and answers a parked ask_user', async () => {
    const { cookie } = await logIn(h.base, TOKENS.alice.token);
    const stream = await openStream(h.base, { cookie });
    const asking = h.api(
      'POST',
      '/v1/sessions/sa/runs/r1/rounds',
      { calls: [{ id: 'q', name: 'ask_user', args: { question: 'Go?', choices: ['yes', 'no'] } }] },
      bearer('backA'),
    );
    await stream.waitFor((e) => e.some((x) => x.name === 'asked'));
    const item = stream.events.find((x) => x.name === 'asked')?.data as { id: string; form: unknown };
    expect(item.form).toEqual({ kind: 'choices', question: 'Go?', choices: ['yes', 'no'] });
    const outside = await h.api(
      'POST',
      `/inbox/api/sessions/sa/inputs/${item.id}`,
      { output: { answer: 'maybe' } },
      { cookie },
    );
    expect(outside.status).toBe(400);
    const ok = await h.api(
      'POST',
      `/inbox/api/sessions/sa/inputs/${item.id}`,
      { output: { answer: 'yes' } },
      { cookie },
    );
    expect(ok.json).toEqual({ inputId: item.id, status: 'ok' });
    expect((await asking).json.results[0].output).toEqual({ answer: 'yes' });
    const history = await h.api('GET', '/inbox/api/sessions/sa/runs/r1/history', undefined, { cookie });
    expect(history.json.history.map((l: { name: string }) => l.name)).toEqual(['run_command', 'ask_user']);
    stream.close();
  });
});

describe('the inbox without tokens', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it('is open as the API is, for every tenant, with no login form', async () => {
    const page = await fetch(`${h.base}/inbox`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(await page.text()).not.toContain('/inbox/logout');
    expect((await fetch(`${h.base}/inbox/login`)).status).toBe(404);
    const stream = await openStream(h.base, {});
    await stream.waitFor((e) => e[0]?.name === 'snapshot');
    expect(stream.events[0]?.data).toMatchObject({ who: { role: 'operator', tenant: '*' } });
    stream.close();
  });
});
