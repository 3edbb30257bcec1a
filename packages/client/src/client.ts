// long-file: TdClient is the package's whole surface, one documented method per endpoint of the API; one class reads best in one file
import { TdApiError } from './errors.js';
import { readEvents, sleep, toEvent } from './events.js';
import { answerParkedInputs } from './parked-inputs.js';
import { asyncAnswer, roundPath, roundState } from './rounds.js';
import { SseParser } from './sse-parser.js';
import type {
  AnthropicRoundResponse,
  AnthropicTool,
  AsyncRoundAnswer,
  CatalogEntry,
  Confirmation,
  ConfirmationAnswer,
  Grant,
  GrantRequest,
  HistoryEntry,
  InputAnswer,
  InputAnswered,
  NeutralTool,
  OpenAiResponsesRoundResponse,
  OpenAiResponsesTool,
  OpenAiRoundResponse,
  OpenAiTool,
  ParkedInput,
  RoundItem,
  RoundResponse,
  RoundResponseIn,
  RoundState,
  Session,
  SessionInput,
  TdEvent,
  ToolsResponse,
  WireFormat,
} from './types.js';

type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface TdClientOptions {
  /** The coordinator, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** TD_API_TOKEN of the coordinator, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /**
   * fetch to use (default: the global one). Rounds waiting on a person may take minutes; Node's
   * built-in fetch gives up waiting for response headers after 300 s, so pass one with a longer
   * headers timeout when confirmations can take that long.
   */
  fetch?: FetchLike;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface SubmitRoundOptions extends RequestOptions {
  /** Makes a retry safe: the same key in the same run returns the first submission's round. */
  idempotencyKey?: string;
  format?: WireFormat;
}

/** Answers one parked call of a round (`runRound`); a throw answers it `{error: <message>}`. */
export type InputHandler = (input: ParkedInput) => InputAnswer | Promise<InputAnswer>;

export interface RunRoundOptions extends Omit<SubmitRoundOptions, 'format'> {
  /** Called once for each parked call of this round (ask_user, interactive or client tools). */
  onInput: InputHandler;
  /** How often the parked calls are also listed, in case an `input.requested` event was missed (default 1000 ms). */
  pollIntervalMs?: number;
}

export interface EventsOptions {
  /** Resume after this event id (what the last event you handled carried). */
  lastEventId?: string;
  /** Stops the stream; the iterator then ends without an error. */
  signal?: AbortSignal;
  /** Reconnect with Last-Event-ID when the connection drops (default true). */
  reconnect?: boolean;
  /** Wait before reconnecting, unless the server sent `retry:` (default 1000 ms). */
  retryMs?: number;
}

const enc = encodeURIComponent;
const DEFAULT_RETRY_MS = 1000;
const DEFAULT_INPUT_POLL_MS = 1000;

/** Typed client of the coordinator's HTTP API (API.md). Zero dependencies; fetch-based. */
export class TdClient {
  private readonly baseUrl: string;
  private readonly fetchImpl: FetchLike;
  private readonly headers: Record<string, string>;

  constructor(options: TdClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
    this.headers = { ...options.headers };
    if (options.token) this.headers.authorization = `Bearer ${options.token}`;
  }

  /** Creates or updates a session. */
  putSession(session: string, input: SessionInput, options: RequestOptions = {}): Promise<Session> {
    return this.json('PUT', `/v1/sessions/${enc(session)}`, { ...options, body: input });
  }

  /** Reads a session back; TdApiError 404 when it does not exist. */
  getSession(session: string, options: RequestOptions = {}): Promise<Session> {
    return this.json('GET', `/v1/sessions/${enc(session)}`, options);
  }

  /** The tools array for the model's next request, and the turn-context text. */
  tools(session: string, options?: RequestOptions & { format?: 'neutral' }): Promise<ToolsResponse<NeutralTool>>;
  tools(session: string, options: RequestOptions & { format: 'openai' }): Promise<ToolsResponse<OpenAiTool>>;
  tools(session: string, options: RequestOptions & { format: 'anthropic' }): Promise<ToolsResponse<AnthropicTool>>;
  tools(
    session: string,
    options: RequestOptions & { format: 'openai-responses' },
  ): Promise<ToolsResponse<OpenAiResponsesTool>>;
  tools(
    session: string,
    options: RequestOptions & { format?: WireFormat } = {},
  ): Promise<ToolsResponse<NeutralTool | OpenAiTool | OpenAiResponsesTool | AnthropicTool>> {
    return this.json('GET', `/v1/sessions/${enc(session)}/tools${formatQuery(options.format)}`, options);
  }

  /** Submits a round and waits for its results (confirmations included). */
  submitRound(
    session: string,
    run: string,
    calls: readonly RoundItem[],
    options?: SubmitRoundOptions & { format?: 'neutral' },
  ): Promise<RoundResponse>;
  submitRound(
    session: string,
    run: string,
    calls: readonly RoundItem[],
    options: SubmitRoundOptions & { format: 'openai' },
  ): Promise<OpenAiRoundResponse>;
  submitRound(
    session: string,
    run: string,
    calls: readonly RoundItem[],
    options: SubmitRoundOptions & { format: 'anthropic' },
  ): Promise<AnthropicRoundResponse>;
  submitRound(
    session: string,
    run: string,
    calls: readonly RoundItem[],
    options: SubmitRoundOptions & { format: 'openai-responses' },
  ): Promise<OpenAiResponsesRoundResponse>;
  submitRound(
    session: string,
    run: string,
    calls: readonly RoundItem[],
    options: SubmitRoundOptions = {},
  ): Promise<RoundResponse | OpenAiRoundResponse | OpenAiResponsesRoundResponse | AnthropicRoundResponse> {
    const path = `/v1/sessions/${enc(session)}/runs/${enc(run)}/rounds${formatQuery(options.format)}`;
    const headers: Record<string, string> = {};
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    return this.json('POST', path, { ...options, headers, body: { calls } });
  }

  /**
   * (v1.3) Hands a round over (`Prefer: respond-async`): `running` with its id at once (the round
   * goes on as if you waited; `getRound` answers it, on any coordinator), or `done` with its answer
   * when it had already ended (a retry under the Idempotency-Key of a finished round).
   */
  async submitRoundAsync<F extends WireFormat = 'neutral'>(
    session: string,
    run: string,
    calls: readonly RoundItem[],
    options: SubmitRoundOptions & { format?: F } = {},
  ): Promise<AsyncRoundAnswer<RoundResponseIn<F>>> {
    const path = `/v1/sessions/${enc(session)}/runs/${enc(run)}/rounds${formatQuery(options.format)}`;
    const headers: Record<string, string> = { accept: 'application/json', prefer: 'respond-async' };
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    return asyncAnswer(await this.send('POST', path, { ...options, headers, body: { calls } }));
  }

  /**
   * (v1.3) A round's answer (`done`, exactly as the waiting `submitRound` gives it) or, while it
   * runs, each call's state. `wait` (0–60000 ms) holds the request until the round is done or the
   * time passes. TdApiError 404 for a round the run does not have (or past TD_ROUND_RETENTION_MS).
   */
  async getRound<F extends WireFormat = 'neutral'>(
    session: string,
    run: string,
    round: string,
    options: RequestOptions & { format?: F; wait?: number } = {},
  ): Promise<RoundState<RoundResponseIn<F>>> {
    const path = roundPath(session, run, round, options.format, options.wait);
    return roundState(await this.send('GET', path, { ...options, headers: { accept: 'application/json' } }));
  }

  /** Cancels a run; the number of calls that ended `cancelled`. */
  async cancelRun(session: string, run: string, options: RequestOptions = {}): Promise<number> {
    const body = await this.json<{ cancelled: number }>(
      'DELETE',
      `/v1/sessions/${enc(session)}/runs/${enc(run)}`,
      options,
    );
    return body.cancelled;
  }

  /** Pending confirmations of the session. */
  async confirmations(session: string, options: RequestOptions = {}): Promise<Confirmation[]> {
    const body = await this.json<{ confirmations: Confirmation[] }>(
      'GET',
      `/v1/sessions/${enc(session)}/confirmations`,
      options,
    );
    return body.confirmations;
  }

  /** Answers a confirmation by its confirmationId, or by a callId only one pending confirmation has. */
  answerConfirmation(
    session: string,
    idOrCallId: string,
    decision: { approve: boolean; remember?: boolean; grant?: GrantRequest },
    options: RequestOptions = {},
  ): Promise<ConfirmationAnswer> {
    return this.json('POST', `/v1/sessions/${enc(session)}/confirmations/${enc(idOrCallId)}`, {
      ...options,
      body: decision,
    });
  }

  /** (v1.2) The session's live grants, oldest first. */
  async grants(session: string, options: RequestOptions = {}): Promise<Grant[]> {
    const body = await this.json<{ grants: Grant[] }>('GET', `/v1/sessions/${enc(session)}/grants`, options);
    return body.grants;
  }

  /** (v1.2) Revokes a grant at once; TdApiError 404 when the session has none under that id. */
  async revokeGrant(session: string, grantId: string, options: RequestOptions = {}): Promise<void> {
    await this.json('DELETE', `/v1/sessions/${enc(session)}/grants/${enc(grantId)}`, options);
  }

  /** The session's parked calls waiting for an answer, oldest first. */
  async inputs(session: string, options: RequestOptions = {}): Promise<ParkedInput[]> {
    const body = await this.json<{ inputs: ParkedInput[] }>('GET', `/v1/sessions/${enc(session)}/inputs`, options);
    return body.inputs;
  }

  /**
   * Answers a parked call by its inputId, or by a callId only one parked call has: `{output}`
   * ends it ok, `{error}` ends it error/handler_error. TdApiError 404 when nothing is parked
   * under the id, 409 when several calls have it, 400 for an ask_user answer outside its choices.
   */
  answerInput(
    session: string,
    idOrCallId: string,
    answer: InputAnswer,
    options: RequestOptions = {},
  ): Promise<InputAnswered> {
    return this.json('POST', `/v1/sessions/${enc(session)}/inputs/${enc(idOrCallId)}`, { ...options, body: answer });
  }

  /**
   * Submits a round and, while it waits, answers each of its parked calls through `onInput`
   * (heard from the event stream, and from a poll of `inputs()` as a safety net), so an agent
   * backend's loop stays one call. A parked call whose answer is refused (400) is asked again.
   */
  async runRound(
    session: string,
    run: string,
    calls: readonly RoundItem[],
    options: RunRoundOptions,
  ): Promise<RoundResponse> {
    const { onInput, pollIntervalMs, ...submit } = options;
    const stop = new AbortController();
    const signal = submit.signal ? AbortSignal.any([submit.signal, stop.signal]) : stop.signal;
    const answering = answerParkedInputs(this, {
      session,
      run,
      callIds: new Set(calls.flatMap(callIdOf)),
      onInput,
      signal,
      pollIntervalMs: pollIntervalMs ?? DEFAULT_INPUT_POLL_MS,
    });
    try {
      return await this.submitRound(session, run, calls, submit);
    } finally {
      stop.abort();
      await answering;
    }
  }

  /** Every result recorded in the session (or one tool's), oldest first. */
  async history(session: string, options: RequestOptions & { tool?: string } = {}): Promise<HistoryEntry[]> {
    const query = options.tool === undefined ? '' : `?tool=${enc(options.tool)}`;
    const body = await this.json<{ results: HistoryEntry[] }>(
      'GET',
      `/v1/sessions/${enc(session)}/history${query}`,
      options,
    );
    return body.results;
  }

  /** The catalog: every tool definition the coordinator knows. */
  async catalog(options: RequestOptions = {}): Promise<CatalogEntry[]> {
    const body = await this.json<{ tools: CatalogEntry[] }>('GET', '/v1/tools', options);
    return body.tools;
  }

  /** GET /healthz answered 200. */
  async health(options: RequestOptions = {}): Promise<boolean> {
    const res = await this.send('GET', '/healthz', options);
    await res.body?.cancel();
    return res.ok;
  }

  /** GET /readyz: true on 200, false on 503. */
  async ready(options: RequestOptions = {}): Promise<boolean> {
    const res = await this.send('GET', '/readyz', options);
    const text = await res.text();
    if (res.status === 200) return true;
    if (res.status === 503) return false;
    throw TdApiError.fromResponse(res.status, text);
  }

  /** GET /metrics, Prometheus text. */
  async metrics(options: RequestOptions = {}): Promise<string> {
    const res = await this.send('GET', '/metrics', options);
    const text = await res.text();
    if (!res.ok) throw TdApiError.fromResponse(res.status, text);
    return text;
  }

  /**
   * The session's events as an async iterator. On a dropped connection it reconnects with
   * Last-Event-ID, so the server replays what was missed (15-minute window). Break out of the
   * loop or abort `signal` to stop; a 4xx (unknown session, bad token) throws TdApiError.
   */
  async *events(session: string, options: EventsOptions = {}): AsyncGenerator<TdEvent, void, undefined> {
    const stop = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
    const reconnect = options.reconnect ?? true;
    const path = `/v1/sessions/${enc(session)}/events`;
    let lastEventId = options.lastEventId;
    let retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
    try {
      while (!signal.aborted) {
        const headers: Record<string, string> = { accept: 'text/event-stream' };
        if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
        let res: Response;
        try {
          res = await this.send('GET', path, { signal, headers });
        } catch (e) {
          if (signal.aborted) return;
          if (!reconnect) throw e;
          await sleep(retryMs, signal);
          continue;
        }
        if (!res.ok) {
          const error = TdApiError.fromResponse(res.status, await res.text().catch(() => ''));
          if (!reconnect || res.status < 500) throw error;
          await sleep(retryMs, signal);
          continue;
        }
        const parser = new SseParser();
        try {
          for await (const raw of readEvents(res, parser)) {
            if (raw.id !== undefined) lastEventId = raw.id;
            const event = toEvent(raw);
            if (event) yield event;
          }
        } catch (e) {
          if (signal.aborted) return;
          if (!reconnect) throw e;
        }
        if (!reconnect) return;
        // The server's `retry:` applies unless the caller chose a delay.
        if (options.retryMs === undefined) retryMs = parser.retryMs ?? retryMs;
        await sleep(retryMs, signal);
      }
    } finally {
      stop.abort();
    }
  }

  private async send(
    method: string,
    path: string,
    options: RequestOptions & { headers?: Record<string, string>; body?: unknown },
  ): Promise<Response> {
    const headers: Record<string, string> = { ...this.headers, ...options.headers };
    const init: RequestInit = { method, headers };
    if (options.signal) init.signal = options.signal;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(options.body);
    }
    return this.fetchImpl(`${this.baseUrl}${path}`, init);
  }

  private async json<T>(
    method: string,
    path: string,
    options: RequestOptions & { headers?: Record<string, string>; body?: unknown },
  ): Promise<T> {
    const res = await this.send(method, path, {
      ...options,
      headers: { accept: 'application/json', ...options.headers },
    });
    const text = await res.text();
    if (!res.ok) throw TdApiError.fromResponse(res.status, text);
    return JSON.parse(text) as T;
  }
}

/** A call's id in any of its shapes (OpenAI Responses: `call_id`; its `id` is the item's own), where it has one. */
function callIdOf(item: RoundItem): string[] {
  const id = 'call_id' in item ? item.call_id : 'id' in item ? item.id : undefined;
  return typeof id === 'string' ? [id] : [];
}

function formatQuery(format: WireFormat | undefined): string {
  return format === undefined || format === 'neutral' ? '' : `?format=${format}`;
}
