// API.md "Operations": the queue dashboard (bull-board) at /admin/queues on a distributed
// coordinator process, open without TD_API_TOKEN and behind the bearer token with it.
import { QUEUE_NAMES } from '@tool-dispatch/shared/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../support/redis.js';
import { request } from './processes.js';
import { putSession, runTool, type Stack, startStack, submitRound } from './stack.js';

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

const SETUP_TIMEOUT_MS = 60_000;
const TOKEN = 'td-obs-dashboard-token';
/** bull-board lists each queue under the deployment's prefix, as its Redis keys start. */
const queuesOf = (stack: Stack) =>
  Object.values(QUEUE_NAMES)
    .map((name) => `${stack.prefix}:${name}`)
    .sort();
const nameOf = (stack: Stack, cls: keyof typeof QUEUE_NAMES) => `${stack.prefix}:${QUEUE_NAMES[cls]}`;

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

/** The page's own scripts and styles, resolved against its `<base href>`: paths under the coordinator. */
function assetPaths(html: string): string[] {
  const base = /<base href="([^"]+)"/.exec(html)?.[1] ?? '/';
  return [...html.matchAll(/(?:src|href)="([^"]+\.(?:js|css))"/g)]
    .map((m) => new URL(m[1] as string, `http://coordinator${base}`))
    .filter((u) => u.host === 'coordinator')
    .map((u) => u.pathname);
}

describe('when TD_API_TOKEN is not set', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(redis);
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await stack?.close();
  });

  it('serves the dashboard page as HTML', async () => {
    const r = await request(`${stack.coordinator.url}/admin/queues`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    expect(r.text).toMatch(/<html/i);
    // Only this origin: bull-board's CDN fonts are stripped, and the CSP says so to the browser.
    expect(r.text).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    expect(r.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    // The page loads its assets from under /admin/queues, and they are there.
    const assets = assetPaths(r.text);
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) {
      expect(asset, 'asset path').toMatch(/^\/admin\/queues\//);
      expect((await request(`${stack.coordinator.url}${asset}`)).status, asset).toBe(200);
    }
  });

  it('lists both queues in bull-board’s API, with the jobs a round left', async () => {
    await putSession(stack, 's-dash');
    await submitRound(stack, { session: 's-dash', run: 'r1' }, [
      { id: 'f', name: 'find_tools', args: { names: ['calculate'] } },
      runTool('c', 'calculate', { expression: '1 + 1' }),
    ]);
    type Listed = { name: string; counts: Record<string, number> };
    const url = `${stack.coordinator.url}/admin/queues/api/queues`;
    // The worker marks the job completed just after it sends the outcome: give it a moment.
    let queues: Listed[] = [];
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
      const r = await request(url);
      expect(r.status).toBe(200);
      queues = r.json.queues;
      if (queues.find((q) => q.name === nameOf(stack, 'concurrent'))?.counts.completed === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(queues.map((q) => q.name).sort()).toEqual(queuesOf(stack));
    expect(queues.find((q) => q.name === nameOf(stack, 'concurrent'))?.counts).toMatchObject({
      completed: 1,
      failed: 0,
    });
    expect(queues.find((q) => q.name === nameOf(stack, 'serial'))?.counts).toMatchObject({ completed: 0, active: 0 });
  });
});

describe('when TD_API_TOKEN is set', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack(redis, { coordinatorEnv: { TD_API_TOKEN: TOKEN } });
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await stack?.close();
  });

  const paths = ['/admin/queues', '/admin/queues/api/queues'];

  it.each(paths)('refuses %s without the token, with 401 and the error body', async (path) => {
    const r = await request(`${stack.coordinator.url}${path}`);
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe('Bearer');
    expect(r.json).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
  });

  it.each(paths)('refuses %s with a wrong token', async (path) => {
    const r = await request(`${stack.coordinator.url}${path}`, { headers: { authorization: 'Bearer not-it' } });
    expect(r.status).toBe(401);
    expect(r.json.error.code).toBe('unauthorized');
  });

  it('refuses the page’s assets without the token too', async () => {
    const page = await request(`${stack.coordinator.url}/admin/queues`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const assets = assetPaths(page.text);
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) {
      expect((await request(`${stack.coordinator.url}${asset}`)).status, asset).toBe(401);
    }
  });

  it('serves the page and the API with the token', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const page = await request(`${stack.coordinator.url}/admin/queues`, { headers: auth });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const api = await request(`${stack.coordinator.url}/admin/queues/api/queues`, { headers: auth });
    expect(api.status).toBe(200);
    expect(api.json.queues.map((q: { name: string }) => q.name).sort()).toEqual(queuesOf(stack));
  });

  it('sends a browser asking for the page to the login form; API clients still get the JSON 401', async () => {
    const r = await fetch(`${stack.coordinator.url}/admin/queues`, {
      headers: { accept: 'text/html' },
      redirect: 'manual',
    });
    expect(r.status).toBe(303);
    expect(r.headers.get('location')).toBe('/admin/queues/login');
    const api = await request(`${stack.coordinator.url}/admin/queues/api/queues`, { headers: { accept: 'text/html' } });
    expect(api.status).toBe(401);
  });

  it('gives a session cookie for the right token only, and takes it under /admin/queues only', async () => {
    const login = (token: string) =>
      fetch(`${stack.coordinator.url}/admin/queues/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
        redirect: 'manual',
      });
    const wrong = await login('not-it');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const right = await login(TOKEN);
    expect(right.status).toBe(303);
    const cookie = (right.headers.get('set-cookie') ?? '').split(';')[0] as string;
    expect(right.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict/);
    const withCookie = { cookie };
    expect((await request(`${stack.coordinator.url}/admin/queues/api/queues`, { headers: withCookie })).status).toBe(
      200,
    );
    expect((await request(`${stack.coordinator.url}/v1/tools`, { headers: withCookie })).status).toBe(401);
    // Forged where it matters: a byte of the MAC, or of the issue time (a bit the MAC covers), each refused.
    const [name, value] = cookie.split('=') as [string, string];
    const [v, issued, mac] = value.split('.') as [string, string, string];
    const macBytes = Buffer.from(mac, 'base64url');
    macBytes[31] = (macBytes[31] as number) ^ 0x10;
    const unusedBitSet = `${mac.slice(0, -1)}${B64URL[B64URL.indexOf(mac.at(-1) as string) | 1]}`;
    for (const forged of [
      `${v}.${issued}.${macBytes.toString('base64url')}`,
      `${v}.${Number(issued) - 1}.${mac}`,
      // The same MAC bytes spelled another way (a bit decoding ignores): refused too, as not the cookie issued.
      `${v}.${issued}.${unusedBitSet}`,
    ]) {
      const headers = { cookie: `${name}=${forged}` };
      expect((await request(`${stack.coordinator.url}/admin/queues/api/queues`, { headers })).status, forged).toBe(401);
    }
  });

  it('keeps the probes and /metrics open', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect((await request(`${stack.coordinator.url}${path}`)).status, path).toBe(200);
    }
  });
});
