import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TdClient } from '@tool-dispatch/client';
import {
  type BuildServerOptions,
  buildServer,
  type CreateEngineOptions,
  createEngine,
  type Dispatcher,
} from '@tool-dispatch/coordinator';
import { type DispatchConfigOptions, resolveConfig } from '@tool-dispatch/shared';
import { type Answer, readReply } from '../support/http.js';
import { readEventStream } from '../support/sse.js';

export interface Harness {
  base: string;
  app: Awaited<ReturnType<typeof buildServer>>;
  engine: Dispatcher;
  client: TdClient;
  workspaceRoot: string;
  api(method: string, p: string, body?: unknown, headers?: Record<string, string>): Promise<ApiAnswer>;
  close(): Promise<void>;
}

export type ApiAnswer = Answer;

export interface HarnessOptions {
  config?: DispatchConfigOptions;
  server?: Omit<BuildServerOptions, 'dispatcher'>;
  /** Engine options beside its config (hooks, extra handlers). */
  engine?: Omit<CreateEngineOptions, 'config'>;
  /** Wraps the engine (e.g. to override ready()). */
  wrap?: (engine: Dispatcher) => Dispatcher;
}

/** A real server on a free port over a fresh workspace root. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const workspaceRoot = await mkdtemp(path.join(tmpdir(), 'td-http-'));
  // An empty environment: the test decides every setting.
  const config = resolveConfig({ workspaceRoot, ...options.config }, {});
  const engine = await createEngine({ ...options.engine, config });
  const dispatcher = options.wrap ? options.wrap(engine) : engine;
  const app = await buildServer({ dispatcher, ...options.server });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('server has no port');
  const base = `http://127.0.0.1:${address.port}`;
  const token = options.server?.apiToken;
  const client = new TdClient({ baseUrl: base, ...(token ? { token } : {}) });
  return {
    base,
    app,
    engine,
    client,
    workspaceRoot,
    async api(method, p, body, headers = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        const h = init.headers as Record<string, string>;
        if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['content-type'] = 'application/json';
      }
      return readReply(await fetch(base + p, init));
    },
    async close() {
      await engine.drain();
      // As the process does (serve.ts closeWithin): open connections get 5 s to end, then are cut.
      const cut = setTimeout(() => app.server.closeAllConnections(), 5_000);
      await app.close();
      clearTimeout(cut);
      await engine.close();
      await rm(workspaceRoot, { recursive: true, force: true });
    },
  };
}

let seq = 0;
/** A fresh id with a readable prefix. */
export const uid = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

/** A call through run_tool (how every provider but claude-code calls a deferred tool). */
export const rt = (name: string, args: unknown, id = uid('c')) => ({ id, name: 'run_tool', args: { name, args } });
/** A direct call. */
export const direct = (name: string, args: unknown, id = uid('c')) => ({ id, name, args });

/** Creates a session (200 expected) and returns its state. */
export async function putSession(h: Harness, session: string, body: Record<string, unknown> = { provider: 'openai' }) {
  const r = await h.api('PUT', `/v1/sessions/${session}`, body);
  if (r.status !== 200) throw new Error(`PUT session ${session} → ${r.status} ${r.text}`);
  return r.json;
}

/** Marks schemas fetched in a separate setup run, so later run_tool calls execute. */
export async function fetchSchemas(h: Harness, session: string, names: string[]): Promise<void> {
  const r = await h.api('POST', `/v1/sessions/${session}/runs/${uid('setup')}/rounds`, {
    calls: [direct('find_tools', { names })],
  });
  if (r.status !== 200 || r.json.results[0].status !== 'ok') throw new Error(`find_tools → ${r.status} ${r.text}`);
}

/** POSTs a round and expects 200. */
export async function round(h: Harness, session: string, run: string, calls: unknown[], query = '') {
  const r = await h.api('POST', `/v1/sessions/${session}/runs/${run}/rounds${query}`, { calls });
  if (r.status !== 200) throw new Error(`round → ${r.status} ${r.text}`);
  return r.json;
}

export interface TappedEvent {
  id: string | undefined;
  name: string;
  // biome-ignore lint/suspicious/noExplicitAny: test helper reads arbitrary JSON payloads
  data: any;
}

/** A raw event-stream reader over fetch: what arrived, the raw text, and a way to wait. */
export interface EventTap {
  status: number;
  headers: Headers;
  events: TappedEvent[];
  raw: string;
  waitFor<T>(pick: (events: TappedEvent[]) => T | undefined | false, ms?: number): Promise<T>;
  close(): void;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
}

export async function tapEvents(h: Harness, session: string, headers: Record<string, string> = {}): Promise<EventTap> {
  const controller = new AbortController();
  const res = await fetch(`${h.base}/v1/sessions/${session}/events`, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const tap: EventTap = {
    status: res.status,
    headers: res.headers,
    events: [],
    raw: '',
    waitFor(pick, ms = 5000) {
      return new Promise((resolve, reject) => {
        const deadline = Date.now() + ms;
        const check = () => {
          const v = pick(tap.events);
          if (v) return resolve(v);
          if (Date.now() > deadline) {
            return reject(new Error(`events not seen in ${ms} ms; got ${tap.events.map((e) => e.name).join(', ')}`));
          }
          setTimeout(check, 10);
        };
        check();
      });
    },
    close: () => controller.abort(),
    ended: Promise.resolve(),
  };
  tap.ended = readEventStream(res.body, {
    onText: (text) => {
      tap.raw += text;
    },
    onEvent: (e) => {
      tap.events.push(e);
    },
  });
  return tap;
}

export const names = (events: TappedEvent[]) => events.map((e) => e.name);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
