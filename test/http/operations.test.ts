import type { Dispatcher } from '@tool-dispatch/coordinator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, putSession, startHarness, tapEvents, uid } from './harness.js';

const TOKEN = 'test-token-0123456789';

/** Overrides one method of the real engine. */
function withOverride<K extends keyof Dispatcher>(key: K, value: Dispatcher[K]) {
  return (engine: Dispatcher): Dispatcher =>
    new Proxy(engine, {
      get(target, prop) {
        if (prop === key) return value;
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
}

describe('operations', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it('answers GET /healthz 200', async () => {
    const r = await h.api('GET', '/healthz');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok' });
  });

  it('answers GET /readyz 200 when the engine is ready', async () => {
    expect((await h.api('GET', '/readyz')).status).toBe(200);
  });

  it('answers GET /metrics in the Prometheus text format, a minimal exposition when none is wired in', async () => {
    const r = await h.api('GET', '/metrics');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(r.text).toMatch(/^# HELP td_rounds_in_progress /m);
    expect(r.text).toMatch(/^# TYPE td_rounds_in_progress gauge$/m);
    expect(r.text).toMatch(/^td_rounds_in_progress 0$/m);
    expect(r.text.endsWith('\n')).toBe(true);
  });
});

describe('when the engine is not ready', () => {
  it.each([
    ['answers false', withOverride('ready', async () => false)],
    ['throws', withOverride('ready', async () => Promise.reject(new Error('redis down')))],
  ])('answers GET /readyz 503 with an error body when ready() %s', async (_what, wrap) => {
    const h = await startHarness({ wrap });
    try {
      const r = await h.api('GET', '/readyz');
      expect(r.status).toBe(503);
      expect(r.json.error.code).toBe('not_ready');
      expect((await h.api('GET', '/healthz')).status).toBe(200);
    } finally {
      await h.close();
    }
  });
});

describe('with metricsText and extraRoutes', () => {
  it('serves the given exposition and mounts the extra routes', async () => {
    const h = await startHarness({
      server: {
        metricsText: async () => '# HELP td_x x\n# TYPE td_x counter\ntd_x 3\n',
        extraRoutes: async (app) => {
          app.get('/admin/queues', async () => ({ queues: [] }));
        },
      },
    });
    try {
      expect((await h.api('GET', '/metrics')).text).toBe('# HELP td_x x\n# TYPE td_x counter\ntd_x 3\n');
      expect((await h.api('GET', '/admin/queues')).json).toEqual({ queues: [] });
    } finally {
      await h.close();
    }
  });

  it('answers 500 in the error shape, without internals, when a route fails unexpectedly', async () => {
    const reported: unknown[] = [];
    const h = await startHarness({
      server: {
        metricsText: async () => {
          throw new Error('registry exploded at /secret/path');
        },
        onInternalError: (e) => reported.push(e),
      },
    });
    try {
      const r = await h.api('GET', '/metrics');
      expect(r.status).toBe(500);
      expect(r.json.error.code).toBe('internal_error');
      expect(r.text).not.toContain('/secret/path');
      expect(reported).toHaveLength(1);
    } finally {
      await h.close();
    }
  });
});

describe('with TD_API_TOKEN set', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      server: {
        apiToken: TOKEN,
        extraRoutes: async (app) => {
          app.get('/admin/queues', async () => ({ queues: [] }));
        },
      },
    });
  });
  afterAll(() => h.close());

  it.each([
    ['no Authorization header', {}],
    ['another scheme', { authorization: `Basic ${TOKEN}` }],
    ['a wrong token', { authorization: 'Bearer wrong' }],
    ['a prefix of the token', { authorization: `Bearer ${TOKEN.slice(0, 10)}` }],
    ['a longer token', { authorization: `Bearer ${TOKEN}x` }],
  ])('answers /v1/* and /admin/* 401 for %s', async (_what, headers: Record<string, string>) => {
    for (const [method, p, body] of [
      ['GET', '/v1/tools', undefined],
      ['PUT', `/v1/sessions/${uid('s')}`, { provider: 'openai' }],
      ['POST', `/v1/sessions/${uid('s')}/runs/r/rounds`, { calls: [] }],
      ['GET', `/v1/sessions/${uid('s')}/events`, undefined],
      ['GET', '/admin/queues', undefined],
    ] as const) {
      const r = await h.api(method, p, body, headers);
      expect(r.status, `${method} ${p}`).toBe(401);
      expect(r.json.error.code).toBe('unauthorized');
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('lets the right token through', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await h.api('GET', '/v1/tools', undefined, auth)).status).toBe(200);
    expect((await h.api('GET', '/admin/queues', undefined, auth)).status).toBe(200);
    const s = uid('s');
    expect((await h.api('PUT', `/v1/sessions/${s}`, { provider: 'openai' }, auth)).status).toBe(200);
    const tap = await tapEvents(h, s, auth);
    expect(tap.status).toBe(200);
    tap.close();
  });

  it('keeps /healthz, /readyz and /metrics open', async () => {
    for (const p of ['/healthz', '/readyz', '/metrics']) expect((await h.api('GET', p)).status, p).toBe(200);
  });

  it('refuses before reading the body, so an unauthorised request changes nothing', async () => {
    const s = uid('s');
    await h.api('PUT', `/v1/sessions/${s}`, { provider: 'openai' });
    expect((await h.api('GET', `/v1/sessions/${s}`, undefined, { authorization: `Bearer ${TOKEN}` })).status).toBe(404);
  });
});

describe('without TD_API_TOKEN', () => {
  it('needs no Authorization header', async () => {
    const h = await startHarness();
    try {
      const s = uid('s');
      await putSession(h, s);
      expect((await h.api('GET', '/v1/tools')).status).toBe(200);
    } finally {
      await h.close();
    }
  });
});
