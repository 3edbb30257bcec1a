// The queue dashboard in a real browser (headless Chromium, test/support/browser.ts) against a
// distributed coordinator process with TD_API_TOKEN set: the login form, the queues under the
// deployment's prefix, the serial queue read-only, and no request leaving loopback.
import { QUEUE_NAMES } from '@tool-dispatch/shared/redis';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopback, launchChromium, type RecordedTraffic, recordTraffic } from '../support/browser.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { request } from './processes.js';
import { runTool, type Stack, startStack, submitRound } from './stack.js';

const SETUP_TIMEOUT_MS = 90_000;
const TOKEN = 'td-browser-dashboard-token';
const auth = { authorization: `Bearer ${TOKEN}` };

let redis: TestRedis;
let stack: Stack;
let browser: Browser;

/** A round that leaves a completed job on each queue: a calculate (concurrent) and a run_command (serial). */
async function leaveJobs(): Promise<void> {
  const session = 's-browser';
  const put = await request(`${stack.coordinator.url}/v1/sessions/${session}`, {
    method: 'PUT',
    body: { provider: 'openai', autoApprove: ['run_command'] },
    headers: auth,
  });
  if (put.status !== 200) throw new Error(`PUT session: ${put.status} ${put.text}`);
  const round = await submitRound(
    stack,
    { session, run: 'r1' },
    [
      { id: 'f', name: 'find_tools', args: { names: ['calculate', 'run_command'] } },
      runTool('c', 'calculate', { expression: '1 + 1' }),
      runTool('x', 'run_command', { command: 'true' }),
    ],
    auth,
  );
  expect(round.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
  // The worker marks a job completed just after it sends the outcome: wait until both are.
  for (const deadline = Date.now() + 10_000; ; ) {
    const listed = await request(`${stack.coordinator.url}/admin/queues/api/queues`, { headers: auth });
    const counts = (listed.json.queues as { counts: { completed: number } }[]).map((q) => q.counts.completed);
    if (counts.length === 2 && counts.every((n) => n === 1)) return;
    if (Date.now() > deadline) throw new Error(`jobs not completed: ${listed.text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  redis = await startRedis();
  stack = await startStack(redis, { coordinatorEnv: { TD_API_TOKEN: TOKEN } });
  await leaveJobs();
  browser = await launchChromium();
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
  await redis?.stop();
});

const prefixed = (cls: keyof typeof QUEUE_NAMES) => `${stack.prefix}:${QUEUE_NAMES[cls]}`;

async function logIn(page: Page, token: string): Promise<void> {
  await page.goto(`${stack.coordinator.url}/admin/queues`);
  await page.locator('input[name="token"]').fill(token);
  await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Log in' }).click()]);
}

describe('when a browser opens the dashboard with TD_API_TOKEN set', () => {
  let context: BrowserContext;
  let traffic: RecordedTraffic;
  let page: Page;
  beforeAll(async () => {
    context = await browser.newContext();
    traffic = await recordTraffic(context);
    page = await context.newPage();
  });
  afterAll(async () => {
    await context?.close();
  });

  it('is sent to the login form, not a JSON 401, and a wrong token is refused there', async () => {
    const answer = await page.goto(`${stack.coordinator.url}/admin/queues`);
    expect(new URL(page.url()).pathname).toBe('/admin/queues/login');
    expect(answer?.status()).toBe(200);
    await logIn(page, 'not-the-token');
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/not the API token/);
    expect(await context.cookies()).toEqual([]);
  });

  it('logs in with the token: an HttpOnly SameSite=Strict cookie, then both queues under the prefix', async () => {
    await logIn(page, TOKEN);
    expect(new URL(page.url()).pathname).toBe('/admin/queues/');
    const [cookie, ...more] = await context.cookies();
    expect(more).toEqual([]);
    expect(cookie).toMatchObject({ name: 'td_dashboard', httpOnly: true, sameSite: 'Strict', path: '/admin/queues' });
    expect(cookie?.value).not.toContain(TOKEN);
    for (const cls of ['concurrent', 'serial'] as const) {
      await page.getByText(prefixed(cls)).first().waitFor({ timeout: 10_000 });
    }
  });

  it('offers Retry on the concurrent queue’s jobs and none on the serial queue’s', async () => {
    const jobPage = async (cls: keyof typeof QUEUE_NAMES) => {
      await page.goto(
        `${stack.coordinator.url}/admin/queues/queue/${encodeURIComponent(prefixed(cls))}?status=completed`,
      );
      // A loaded machine (the CI suite at load 14) drew the page in more than playwright's 30 s.
      await page
        .getByText(/run_command|calculate/)
        .first()
        .waitFor({ timeout: 60_000 });
      return page.getByRole('button', { name: /retry/i }).count();
    };
    expect(await jobPage('concurrent')).toBeGreaterThan(0);
    expect(await jobPage('serial')).toBe(0);
  }, 150_000);

  it('refuses a retry of the serial queue through the API, with the cookie', async () => {
    const queue = encodeURIComponent(prefixed('serial'));
    const retry = await context.request.put(
      `${stack.coordinator.url}/admin/queues/api/queues/${queue}/retry/completed`,
    );
    expect(retry.status()).toBe(405);
  });

  it('made no request that left loopback, and no load the page’s CSP had to refuse', () => {
    expect(traffic.requests.length).toBeGreaterThan(5);
    expect(traffic.requests.filter((url) => !isLoopback(url))).toEqual([]);
    expect(traffic.cspViolations).toEqual([]);
  });
});
