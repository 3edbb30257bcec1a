import { type Answer, readReply } from '../support/http.js';
import { readEventStream } from '../support/sse.js';

/** A result as API.md describes it (read loosely: tests check the fields). */
export interface Result {
  id: string;
  name: string;
  status: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read each tool's own output shape
  output?: any;
  error?: { code: string; message: string; details?: unknown };
  dedupedFrom?: string;
  dedupedFromRound?: string;
  durationMs: number;
  /** (v1.2) Who let the call through the confirm gate. */
  approval?: { by: string; at: string };
  [extra: string]: unknown;
}

export interface RoundAnswer {
  round: string;
  results: Result[];
  messages?: Array<{ role: string; tool_call_id: string; content: unknown }>;
  content?: Array<{ type: string; tool_use_id: string; content: unknown; is_error: unknown }>;
}

export type { Answer };

export interface Call {
  id: string;
  name: string;
  args: unknown;
}

let seq = 0;
/** A fresh id with a readable prefix (valid under API.md's id pattern). */
export const uid = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${(++seq).toString(36)}`;

/** A call through run_tool (how every provider but claude-code calls a deferred tool). */
export const rt = (name: string, args: unknown, id = uid('c')): Call => ({
  id,
  name: 'run_tool',
  args: { name, args },
});
/** A direct call. */
export const direct = (name: string, args: unknown, id = uid('c')): Call => ({ id, name, args });

/** The coordinator's HTTP API, as an agent backend or a dashboard uses it. */
export class Api {
  constructor(
    readonly base: string,
    private readonly token?: string,
  ) {}

  async request(
    method: string,
    p: string,
    body?: unknown,
    headers: Record<string, string> = {},
    timeoutMs = 60_000,
  ): Promise<Answer> {
    const h: Record<string, string> = { ...headers };
    if (this.token && !Object.keys(h).some((k) => k.toLowerCase() === 'authorization'))
      h.authorization = `Bearer ${this.token}`;
    const init: RequestInit = { method, headers: h, signal: AbortSignal.timeout(timeoutMs) };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['content-type'] = 'application/json';
    }
    return readReply(await fetch(this.base + p, init));
  }

  /** PUT a session; 200 expected. */
  async putSession(session: string, body: Record<string, unknown> = { provider: 'openai' }) {
    const r = await this.request('PUT', `/v1/sessions/${session}`, body);
    if (r.status !== 200) throw new Error(`PUT /v1/sessions/${session} → ${r.status} ${r.text}`);
    return r.json;
  }

  /** POST a round without checks. */
  postRound(
    session: string,
    run: string,
    calls: unknown[],
    options: { query?: string; headers?: Record<string, string> } = {},
  ) {
    const q = options.query ? `?${options.query}` : '';
    return this.request('POST', `/v1/sessions/${session}/runs/${run}/rounds${q}`, { calls }, options.headers);
  }

  /** POST a round: 200, one result per call, in call order (ids match). */
  async round(
    session: string,
    run: string,
    calls: Call[],
    options: { query?: string; headers?: Record<string, string> } = {},
  ): Promise<RoundAnswer> {
    const r = await this.postRound(session, run, calls, options);
    if (r.status !== 200) throw new Error(`POST round → ${r.status} ${r.text}`);
    const b = r.json as RoundAnswer;
    if (!Array.isArray(b?.results) || b.results.length !== calls.length)
      throw new Error(`expected ${calls.length} results, got ${r.text}`);
    b.results.forEach((res, i) => {
      if (res.id !== calls[i]?.id) throw new Error(`result #${i} is ${res.id}, not ${calls[i]?.id}: out of call order`);
    });
    return b;
  }

  /** One call in a fresh run; its result. */
  async one(session: string, call: Call, run = uid('run')): Promise<Result> {
    return (await this.round(session, run, [call])).results[0] as Result;
  }

  /** Marks schemas fetched with find_tools in a setup run. */
  async fetchSchemas(session: string, names: string[]): Promise<void> {
    const r = await this.one(session, direct('find_tools', { names }), uid('setup'));
    if (r.status !== 'ok') throw new Error(`find_tools → ${JSON.stringify(r)}`);
  }

  /** A session (openai unless said) whose listed tools' schemas are fetched. */
  async session(
    names: string[],
    body: Record<string, unknown> = { provider: 'openai' },
    session = uid('s'),
  ): Promise<string> {
    await this.putSession(session, body);
    if (names.length) await this.fetchSchemas(session, names);
    return session;
  }

  async history(session: string, tool?: string): Promise<Array<Result & { round: string; run: string; at: unknown }>> {
    const r = await this.request('GET', `/v1/sessions/${session}/history${tool ? `?tool=${tool}` : ''}`);
    if (r.status !== 200) throw new Error(`GET history → ${r.status} ${r.text}`);
    return r.json.results;
  }

  async pending(session: string): Promise<Confirmation[]> {
    const r = await this.request('GET', `/v1/sessions/${session}/confirmations`);
    if (r.status !== 200) throw new Error(`GET confirmations → ${r.status} ${r.text}`);
    return r.json.confirmations;
  }

  answer(
    session: string,
    id: string,
    body: { approve: boolean; remember?: boolean; grant?: { scope: 'args' | 'tool'; run?: true; ttlMs?: number } },
  ) {
    return this.request('POST', `/v1/sessions/${session}/confirmations/${id}`, body);
  }

  /** Waits until `n` confirmations of the session are pending, and returns them. */
  async waitPending(session: string, n: number, ms = 15_000): Promise<Confirmation[]> {
    const deadline = Date.now() + ms;
    for (;;) {
      const list = await this.pending(session);
      if (list.length >= n) return list;
      if (Date.now() > deadline) throw new Error(`${n} confirmations never pending; have ${JSON.stringify(list)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Opens the session's event stream (headers received when it resolves). */
  async events(session: string, headers: Record<string, string> = {}): Promise<EventTap> {
    const h: Record<string, string> = { accept: 'text/event-stream', ...headers };
    if (this.token) h.authorization = `Bearer ${this.token}`;
    const controller = new AbortController();
    const res = await fetch(`${this.base}/v1/sessions/${session}/events`, { headers: h, signal: controller.signal });
    return new EventTap(res, controller);
  }
}

export interface Confirmation {
  confirmationId: string;
  round: string;
  run: string;
  callId: string;
  name: string;
  args: Record<string, unknown>;
}

export interface TappedEvent {
  id: string | undefined;
  name: string;
  // biome-ignore lint/suspicious/noExplicitAny: event payloads, checked by the tests
  data: any;
}

/** A raw event-stream reader: the events, the raw text, and a way to wait for what should come. */
export class EventTap {
  readonly status: number;
  readonly headers: Headers;
  readonly events: TappedEvent[] = [];
  raw = '';
  readonly ended: Promise<void>;

  constructor(
    res: Response,
    private readonly controller: AbortController,
  ) {
    this.status = res.status;
    this.headers = res.headers;
    this.ended = readEventStream(res.body, {
      onText: (text) => {
        this.raw += text;
      },
      onEvent: (e) => {
        this.events.push(e);
      },
    });
  }

  named(name: string): TappedEvent[] {
    return this.events.filter((e) => e.name === name);
  }

  waitFor<T>(pick: (events: TappedEvent[]) => T | undefined | false, ms = 15_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const deadline = Date.now() + ms;
      const check = () => {
        const v = pick(this.events);
        if (v) return resolve(v);
        if (Date.now() > deadline)
          return reject(new Error(`events not seen in ${ms} ms; got ${this.events.map((e) => e.name).join(', ')}`));
        setTimeout(check, 10);
      };
      check();
    });
  }

  close(): void {
    this.controller.abort();
  }
}

/** The body of an http_request result, parsed when it is JSON. */
// biome-ignore lint/suspicious/noExplicitAny: the target server's JSON answers
export function httpBody(r: Result): any {
  const b = r.output?.body;
  if (typeof b !== 'string') return b;
  try {
    return JSON.parse(b);
  } catch {
    return b;
  }
}

/** The content read_files returned for `p`. */
export function fileContent(r: Result, p: string): unknown {
  const f = (r.output?.files as Array<{ path: string; content: unknown }> | undefined)?.find((x) => x.path === p);
  if (!f) throw new Error(`read_files has no entry for ${p}: ${JSON.stringify(r)}`);
  return f.content;
}
