// The approvals inbox (/inbox) in a real browser (headless Chromium, test/support/browser.ts) on a
// distributed deployment with TD_API_TOKENS: two coordinator processes and a worker on one Redis.
// Rounds go to coordinator A, the page is served by coordinator B, so everything it shows crossed
// the inbox feed (Redis pub/sub). An approver of tenant ta logs in; tenant tb's waiting call never
// shows; no request leaves loopback. TD_INBOX_SCREENSHOT=1 rewrites docs/img/inbox-*.png.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopback, launchChromium, type RecordedTraffic, recordTraffic } from '../support/browser.js';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';
import {
  type Coordinator,
  makeWorkspaceRoot,
  request,
  type StackEnv,
  startCoordinatorProcess,
  startWorkerProcess,
  type Worker,
  waitForOk,
} from './processes.js';

const SETUP_TIMEOUT_MS = 120_000;
const STEP_TIMEOUT_MS = 60_000;
const IMG_DIR = fileURLToPath(new URL('../../docs/img/', import.meta.url));
/** An MCP server whose `ask` tool elicits `{name}` of the client (here: the person, through the inbox). */
const FAKE_MCP = fileURLToPath(new URL('../support/mcp-fake-server.mjs', import.meta.url));
const CLIENT_TOOL = {
  name: 'client_lookup',
  description: 'Looks a record up on the client side.',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};
const TOKENS = {
  alice: { token: 'tok-inbox-alice-0123456789', tenant: 'ta', role: 'approver' },
  backA: { token: 'tok-inbox-back-a-012345678', tenant: 'ta', role: 'backend' },
  backB: { token: 'tok-inbox-back-b-012345678', tenant: 'tb', role: 'backend' },
  ops: { token: 'tok-inbox-operator-0123456', tenant: '*', role: 'operator' },
} as const;
const bearer = (who: keyof typeof TOKENS) => ({ authorization: `Bearer ${TOKENS[who].token}` });

type Result = { id: string; status: string; output?: unknown; approval?: { by: string } };

let redis: TestRedis;
let workspace: { dir: string; remove(): Promise<void> };
let a: Coordinator;
let b: Coordinator;
let worker: Worker;
let browser: Browser;
let context: BrowserContext;
let traffic: RecordedTraffic;
let page: Page;
let otherTenantsRound: Promise<Result[]>;

function tokensFile(dir: string): string {
  const file = path.join(dir, 'tokens.json');
  const tokens = Object.entries(TOKENS).map(([name, t]) => ({
    name,
    sha256: createHash('sha256').update(t.token).digest('hex'),
    tenant: t.tenant,
    role: t.role,
  }));
  writeFileSync(file, JSON.stringify({ tokens }));
  return file;
}

async function putSession(session: string, who: 'backA' | 'backB'): Promise<void> {
  const r = await request(`${a.url}/v1/sessions/${session}`, {
    method: 'PUT',
    body: { provider: 'mcp', clientTools: [CLIENT_TOOL] },
    headers: bearer(who),
  });
  if (r.status !== 200) throw new Error(`PUT ${session}: ${r.status} ${r.text}`);
}

/** Submits a round on coordinator A; resolves with its results once it is answered. */
async function round(session: string, calls: unknown[], who: 'backA' | 'backB' = 'backA'): Promise<Result[]> {
  const r = await request(`${a.url}/v1/sessions/${session}/runs/r1/rounds`, { body: { calls }, headers: bearer(who) });
  if (r.status !== 200) throw new Error(`round: ${r.status} ${r.text}`);
  return r.json.results as Result[];
}

/** Waits until coordinator A's catalog lists `name` (the worker announces its MCP tools once connected). */
async function waitForTool(name: string): Promise<void> {
  for (const end = Date.now() + 30_000; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
    const listed = await request(`${a.url}/v1/tools`, { headers: bearer('ops') });
    if ((listed.json.tools as { name: string }[]).some((t) => t.name === name)) return;
  }
  throw new Error(`${name} never joined the catalog`);
}

const items = () => page.locator('#list li.item');
const shot = async (name: string) => {
  if (process.env.TD_INBOX_SCREENSHOT !== '1') return;
  mkdirSync(IMG_DIR, { recursive: true });
  await page.screenshot({ path: path.join(IMG_DIR, name) });
};

/** The page never lists tenant tb's session. */
async function expectNoOtherTenant(): Promise<void> {
  expect(await page.locator('#list li.item .where', { hasText: 'sb /' }).count()).toBe(0);
}

beforeAll(async () => {
  redis = await startRedis();
  workspace = await makeWorkspaceRoot();
  const secrets = await mkdtemp(path.join(tmpdir(), 'td-inbox-tokens-'));
  const env: StackEnv = {
    redisUrl: redis.url,
    prefix: randomPrefix('td-inbox'),
    workspaceRoot: workspace.dir,
    extra: { TD_API_TOKENS: tokensFile(secrets) },
  };
  const mcpConfig = path.join(secrets, 'mcp.json');
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { fake: { command: 'node', args: [FAKE_MCP] } } }));
  [a, b, worker] = await Promise.all([
    startCoordinatorProcess(env),
    startCoordinatorProcess(env),
    startWorkerProcess(env, { TD_MCP_CONFIG: mcpConfig }),
  ]);
  await waitForOk(`${a.url}/readyz`);
  await waitForTool('mcp__fake__ask');
  await putSession('sa', 'backA');
  await putSession('sb', 'backB');
  // Tenant tb's call waits for the whole test: the approver of ta must never see it.
  otherTenantsRound = round('sb', [{ id: 'x', name: 'run_command', args: { command: 'echo other tenant' } }], 'backB');
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 760 } });
  traffic = await recordTraffic(context);
  page = await context.newPage();
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await Promise.all([a?.stop(), b?.stop(), worker?.stop()]);
  await workspace?.remove();
  await redis?.stop();
});

describe('the approvals inbox, as an approver of tenant ta, on another coordinator than the rounds', () => {
  it(
    'sends a browser to the login form, and logs the approver in with an HttpOnly SameSite=Strict cookie',
    async () => {
      await page.goto(`${b.url}/inbox`);
      expect(new URL(page.url()).pathname).toBe('/inbox/login');
      await page.locator('input[name="token"]').fill('not-a-token');
      await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Log in' }).click()]);
      await expect(page.getByRole('alert').textContent()).resolves.toMatch(/not one of/);
      await page.locator('input[name="token"]').fill(TOKENS.alice.token);
      await Promise.all([page.waitForURL(`${b.url}/inbox/`), page.getByRole('button', { name: 'Log in' }).click()]);
      const [cookie] = await context.cookies();
      expect(cookie).toMatchObject({ name: 'td_inbox', httpOnly: true, sameSite: 'Strict', path: '/inbox' });
      expect(cookie?.value).not.toContain(TOKENS.alice.token);
      await page.locator('#connection.on').waitFor();
      await expect(page.locator('#who').textContent()).resolves.toBe('alice (approver, tenant ta)');
      await page.locator('#empty').waitFor();
      await expectNoOtherTenant();
    },
    STEP_TIMEOUT_MS,
  );

  it(
    'shows a confirmation while its round waits; approving it with an args grant completes the round, and the grant approves the next identical call without it appearing',
    async () => {
      const call = { id: 'c1', name: 'run_command', args: { command: 'echo approved in the inbox' } };
      const first = round('sa', [call]);
      await items().first().waitFor();
      expect(await items().count()).toBe(1);
      await expect(page.locator('#detail pre.shell').textContent()).resolves.toBe('$ echo approved in the inbox');
      await expect(page.locator('#detail .times').textContent()).resolves.toMatch(/^waited \d+s · [45]m \d\ds left$/);
      await expect(page.locator('body').getAttribute('data-notified')).resolves.toBe('1');
      const grant = page.getByRole('form', { name: 'Approve with a grant' });
      await grant.locator('select[name="scope"]').selectOption('args');
      await grant.locator('select[name="where"]').selectOption('session');
      await grant.locator('select[name="ttl"]').selectOption('900000');
      await grant.getByRole('button', { name: 'Approve with grant' }).click();
      const [result] = await first;
      expect(result).toMatchObject({ status: 'ok', approval: { by: 'alice' } });
      await page.locator('#empty').waitFor();

      const [again] = await round('sa', [{ ...call, id: 'c2' }]);
      expect(again?.status).toBe('ok');
      expect(again?.approval?.by).toMatch(/^grant:gr_/);
      expect(await items().count()).toBe(0);
      await expect(page.locator('body').getAttribute('data-notified')).resolves.toBe('1');
      await expectNoOtherTenant();
    },
    STEP_TIMEOUT_MS,
  );

  it(
    'moves with j/k and answers with a/d',
    async () => {
      const answered = round('sa', [
        { id: 'k1', name: 'run_command', args: { command: 'echo one' } },
        { id: 'k2', name: 'run_command', args: { command: 'echo two' } },
      ]);
      await expect.poll(() => items().count(), { timeout: 10_000 }).toBe(2);
      const selectedCall = async () => (await page.locator('#detail .meta dd').nth(3).textContent()) ?? '';
      // The newest item may be the one selected: start from the top of the list, the round's first call.
      await items().first().click();
      await expect(items().first().getAttribute('aria-selected')).resolves.toBe('true');
      const top = await selectedCall();
      expect(top).toBe('k1');
      await page.keyboard.press('j');
      const second = await selectedCall();
      expect(second).not.toBe(top);
      await page.keyboard.press('k');
      await expect(selectedCall()).resolves.toBe(top);
      await page.keyboard.press('j');
      await page.keyboard.press('d');
      await expect.poll(() => items().count(), { timeout: 10_000 }).toBe(1);
      await expect(selectedCall()).resolves.toBe(top);
      await page.keyboard.press('a');
      const results = await answered;
      const statusOf = (id: string) => results.find((r) => r.id === id)?.status;
      expect(statusOf(top)).toBe('ok');
      expect(statusOf(second)).toBe('denied');
    },
    STEP_TIMEOUT_MS,
  );

  it(
    'answers an ask_user by its choice button',
    async () => {
      const asked = round('sa', [
        { id: 'q1', name: 'ask_user', args: { question: 'Which colour?', choices: ['red', 'blue'] } },
      ]);
      await page.getByRole('button', { name: 'blue' }).waitFor();
      await expect(page.locator('#detail .question').textContent()).resolves.toBe('Which colour?');
      await shot('inbox-ask-user.png');
      await page.getByRole('button', { name: 'blue' }).click();
      const [result] = await asked;
      expect(result).toMatchObject({ status: 'ok', output: { answer: 'blue' } });
      await page.locator('#empty').waitFor();
    },
    STEP_TIMEOUT_MS,
  );

  it(
    'answers an MCP server’s elicitation with a form from its schema, and a client tool with JSON',
    async () => {
      const elicited = round('sa', [{ id: 'm1', name: 'mcp__fake__ask', args: { message: 'Your name?' } }]);
      await page.locator('#detail form.schema input[name="name"]').waitFor();
      await expect(page.locator('#detail form.schema .question').textContent()).resolves.toBe('Your name?');
      await page.locator('#detail form.schema input[name="name"]').fill('Ada');
      await page.getByRole('button', { name: 'Accept' }).click();
      const [answered] = await elicited;
      expect(answered?.status).toBe('ok');
      expect(JSON.stringify(answered?.output)).toContain('Ada');

      const looked = round('sa', [{ id: 'l1', name: 'client_lookup', args: { q: 'ada' } }]);
      await page.locator('#detail form.json-answer textarea').waitFor();
      await page.locator('#detail form.json-answer textarea').fill('{"found": 3}');
      await page.getByRole('button', { name: 'Send output' }).click();
      expect((await looked)[0]).toMatchObject({ status: 'ok', output: { found: 3 } });
      await page.locator('#empty').waitFor();
    },
    STEP_TIMEOUT_MS,
  );

  it(
    'shows an edit_file as a diff of the workspace file, and drops it at once when answered through the API',
    async () => {
      writeFileSync(path.join(workspace.dir, 'ta', 'sa', 'notes.txt'), 'one\ntwo\nthree\n');
      const edited = round('sa', [
        { id: 'e1', name: 'edit_file', args: { path: 'notes.txt', old: 'two', new: 'TWO, reviewed' } },
      ]);
      await page.locator('#detail pre.diff').waitFor();
      await expect(page.locator('#detail .diff .del').allTextContents()).resolves.toEqual(['- two\n']);
      await expect(page.locator('#detail .diff .add').allTextContents()).resolves.toEqual(['+ TWO, reviewed\n']);
      await page.locator('#detail .context td', { hasText: 'ask_user' }).waitFor();
      await shot('inbox-edit-file.png');
      const pending = await request(`${a.url}/v1/sessions/sa/confirmations`, { headers: bearer('backA') });
      const [confirmation] = pending.json.confirmations as { confirmationId: string }[];
      const answer = await request(`${a.url}/v1/sessions/sa/confirmations/${confirmation?.confirmationId}`, {
        body: { approve: true },
        headers: bearer('backA'),
      });
      expect(answer.status).toBe(200);
      await page.locator('#empty').waitFor({ timeout: 5_000 });
      expect(await items().count()).toBe(0);
      expect((await edited)[0]).toMatchObject({ status: 'ok', approval: { by: 'backA' } });
    },
    STEP_TIMEOUT_MS,
  );

  it(
    'never showed tenant tb’s waiting call, which an operator’s inbox lists',
    async () => {
      await expectNoOtherTenant();
      const aliceCookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
      const snapshotOf = async (headers: Record<string, string>) => {
        const res = await fetch(`${b.url}/inbox/api/stream`, { headers });
        const reader = res.body?.getReader();
        let text = '';
        while (!/event: snapshot\ndata: .*\n/.test(text))
          text += new TextDecoder().decode((await reader?.read())?.value);
        await reader?.cancel();
        const data = JSON.parse(/event: snapshot\ndata: (.*)\n/.exec(text)?.[1] ?? '{}');
        return (data.items as { session: string }[]).map((i) => i.session);
      };
      expect(await snapshotOf({ cookie: aliceCookie })).toEqual([]);
      expect(await snapshotOf(bearer('ops'))).toEqual(['sb']);
      const pending = await request(`${a.url}/v1/sessions/sb/confirmations`, { headers: bearer('backB') });
      const [c] = pending.json.confirmations as { confirmationId: string }[];
      await request(`${a.url}/v1/sessions/sb/confirmations/${c?.confirmationId}`, {
        body: { approve: false },
        headers: bearer('backB'),
      });
      expect((await otherTenantsRound)[0]?.status).toBe('denied');
    },
    STEP_TIMEOUT_MS,
  );

  it('made no request that left loopback, and no load the page’s CSP had to refuse', () => {
    expect(traffic.requests.length).toBeGreaterThan(5);
    expect(traffic.requests.filter((url) => !isLoopback(url))).toEqual([]);
    expect(traffic.cspViolations).toEqual([]);
  });
});
