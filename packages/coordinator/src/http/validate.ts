import {
  budgetValueProblem,
  ID_PATTERN,
  isValidId,
  MAX_CALLS_PER_ROUND,
  type ResultBudget,
  schemaProblem,
  type ToolDefinition,
} from '@tool-dispatch/shared';
import type { GrantRequest } from '../confirm/confirm-hub.js';
import type { SessionInput } from '../dispatcher.js';
import type { InputAnswer, ToolSearch } from '../model.js';
import { MAX_GRANT_TTL_MS } from '../rules/grants.js';
import { otherItemOf } from '../rules/normalize-call.js';
import { HttpError } from './errors.js';
import type { WireFormat } from './format.js';

/** Longest Last-Event-ID we pass on; event ids are short, anything longer is not ours. */
const MAX_EVENT_ID_LENGTH = 256;
/** Longest provider name and tool name a client may send. */
const MAX_NAME_LENGTH = 128;
/** Most entries of a session's autoApprove list and of its clientTools. */
const MAX_SESSION_LIST = 1000;

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const invalid = (message: string) => new HttpError(400, 'invalid_request', message);

function quote(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

/** An id from the path, a header or a body (API.md ids), else 400 naming what was wrong. */
export function requireId(value: unknown, what: string): string {
  if (isValidId(value)) return value;
  const got = typeof value === 'string' ? `${quote(value)} (${value.length} chars)` : `a ${typeof value}`;
  throw new HttpError(400, 'invalid_id', `${what} must be a string matching ${ID_PATTERN.source}; got ${got}`);
}

/** `?format=` of tools and rounds. */
export function parseFormat(query: unknown): WireFormat {
  const format = isObject(query) ? query.format : undefined;
  if (format === undefined || format === 'neutral') return 'neutral';
  if (format === 'openai' || format === 'anthropic' || format === 'openai-responses') return format;
  throw invalid(
    `format must be "openai", "openai-responses" or "anthropic" (or absent for the neutral shape); got ${quote(format)}`,
  );
}

/** Longest `wait` of `GET .../rounds/{round}` in ms (API.md v1.3). */
export const MAX_ROUND_WAIT_MS = 60_000;

/** (v1.3) `?wait=` of `GET .../rounds/{round}`: whole ms, 0–60000, default 0. */
export function parseRoundWait(query: unknown): number {
  const raw = isObject(query) ? query.wait : undefined;
  if (raw === undefined || raw === '') return 0;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n > MAX_ROUND_WAIT_MS)
    throw invalid(`wait must be whole milliseconds from 0 to ${MAX_ROUND_WAIT_MS}; got ${quote(raw)}`);
  return n;
}

/** (v1.3) Whether a `Prefer` header (RFC 7240) asks for `respond-async`. */
export function prefersAsync(header: unknown): boolean {
  const values = Array.isArray(header) ? header : [header];
  return values.some(
    (v) => typeof v === 'string' && v.split(',').some((p) => p.split(';')[0]?.trim().toLowerCase() === 'respond-async'),
  );
}

/** The optional `Idempotency-Key` header, an id. */
export function parseIdempotencyKey(header: unknown): string | undefined {
  if (header === undefined) return undefined;
  return requireId(header, 'the Idempotency-Key header');
}

/** `Last-Event-ID` (header, or `?lastEventId=` for clients that cannot set headers). */
export function parseLastEventId(header: unknown, query: unknown): string | undefined {
  const value = header ?? (isObject(query) ? query.lastEventId : undefined);
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > MAX_EVENT_ID_LENGTH || /[\r\n\0]/.test(value)) {
    throw invalid(`Last-Event-ID must be an event id of at most ${MAX_EVENT_ID_LENGTH} characters`);
  }
  return value;
}

/** `?tool=` of history. */
export function parseToolFilter(query: unknown): string | undefined {
  const tool = isObject(query) ? query.tool : undefined;
  if (tool === undefined) return undefined;
  if (typeof tool !== 'string' || tool.length === 0 || tool.length > MAX_NAME_LENGTH) {
    throw invalid(`tool must be one tool name of 1 to ${MAX_NAME_LENGTH} characters`);
  }
  return tool;
}

/**
 * The calls of a round body. Only the envelope is checked here (an object with a valid id per
 * call); a call's name and args are the engine's to judge, so bad args end that call `invalid`
 * instead of failing the whole round.
 */
export function parseRoundBody(body: unknown): unknown[] {
  if (!isObject(body)) throw invalid('the body must be a JSON object {"calls": [...]}');
  const calls = body.calls;
  if (!Array.isArray(calls)) throw invalid('the body must have a "calls" array');
  if (calls.length > MAX_CALLS_PER_ROUND) {
    throw new HttpError(
      400,
      'too_many_calls',
      `a round holds at most ${MAX_CALLS_PER_ROUND} calls (MAX_CALLS_PER_ROUND); got ${calls.length}`,
    );
  }
  calls.forEach((call, i) => {
    if (!isObject(call)) throw invalid(`calls[${i}] must be an object`);
    // OpenAI Responses: the call's id is call_id; `id` (the item's own, optional) is not checked.
    const idKey = call.type === 'function_call' || call.type === 'custom_tool_call' ? 'call_id' : 'id';
    // An item that is not a function call (a text block has no id) ends `invalid` in pass 1.
    if (otherItemOf(call) && call[idKey] === undefined) return;
    requireId(call[idKey], `calls[${i}].${idKey}`);
  });
  return calls;
}

function parseAutoApprove(value: unknown): string[] | 'all' {
  if (value === 'all') return 'all';
  if (
    Array.isArray(value) &&
    value.length <= MAX_SESSION_LIST &&
    value.every((x): x is string => typeof x === 'string' && x.length > 0 && x.length <= MAX_NAME_LENGTH)
  ) {
    return [...value];
  }
  throw invalid(`autoApprove must be "all" or an array of at most ${MAX_SESSION_LIST} tool names`);
}

function parseToolDefinition(value: unknown, at: string): ToolDefinition {
  if (!isObject(value)) throw invalid(`${at} must be a tool definition object`);
  const { name, description, parameters, concurrency, confirm, timeoutMs, interactive } = value;
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw invalid(`${at}.name must be a string of 1 to ${MAX_NAME_LENGTH} characters`);
  }
  if (typeof description !== 'string') throw invalid(`${at}.description must be a string`);
  const problem = schemaProblem(parameters);
  if (problem !== undefined || !isObject(parameters)) {
    throw invalid(`${at}.parameters must be a JSON schema: ${problem ?? 'not an object'}`);
  }
  const def: ToolDefinition = { name, description, parameters };
  if (concurrency !== undefined) {
    if (concurrency !== 'concurrent' && concurrency !== 'serial') {
      throw invalid(`${at}.concurrency must be "concurrent" or "serial"`);
    }
    def.concurrency = concurrency;
  }
  if (confirm !== undefined) {
    if (typeof confirm !== 'boolean') throw invalid(`${at}.confirm must be a boolean`);
    def.confirm = confirm;
  }
  if (timeoutMs !== undefined) {
    if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1) {
      throw invalid(`${at}.timeoutMs must be a positive integer`);
    }
    def.timeoutMs = timeoutMs;
  }
  if (interactive !== undefined) {
    if (typeof interactive !== 'boolean') throw invalid(`${at}.interactive must be a boolean`);
    def.interactive = interactive;
  }
  return def;
}

function parseClientTools(value: unknown): ToolDefinition[] {
  if (!Array.isArray(value) || value.length > MAX_SESSION_LIST) {
    throw invalid(`clientTools must be an array of at most ${MAX_SESSION_LIST} tool definitions`);
  }
  const tools = value.map((t, i) => parseToolDefinition(t, `clientTools[${i}]`));
  const seen = new Set<string>();
  for (const t of tools) {
    if (seen.has(t.name)) throw invalid(`clientTools names ${t.name} twice`);
    seen.add(t.name);
  }
  return tools;
}

/** Body of `PUT /v1/sessions/{session}`. Unknown fields are ignored. */
export function parseSessionBody(body: unknown): SessionInput {
  if (!isObject(body)) throw invalid('the body must be a JSON object {"provider": ...}');
  const { provider, tenant, autoApprove, clientTools, resultBudget, toolSearch } = body;
  if (typeof provider !== 'string' || provider.length === 0 || provider.length > MAX_NAME_LENGTH) {
    throw invalid(
      `provider must be a string of 1 to ${MAX_NAME_LENGTH} characters ("openai", "anthropic", "claude-code", …)`,
    );
  }
  const input: SessionInput = { provider };
  if (tenant !== undefined) input.tenant = requireId(tenant, 'tenant');
  if (autoApprove !== undefined) input.autoApprove = parseAutoApprove(autoApprove);
  if (clientTools !== undefined) input.clientTools = parseClientTools(clientTools);
  if (resultBudget !== undefined) input.resultBudget = parseResultBudget(resultBudget);
  if (toolSearch !== undefined && toolSearch !== null) input.toolSearch = parseToolSearch(toolSearch, provider);
  return input;
}

/** A session's `toolSearch`: `"anthropic"`, for provider `anthropic` only (API.md v1.2). */
function parseToolSearch(value: unknown, provider: string): ToolSearch {
  if (value !== 'anthropic')
    throw invalid(`toolSearch must be "anthropic" (Anthropic's tool search), got ${JSON.stringify(value)}`);
  if (provider !== 'anthropic')
    throw invalid(`toolSearch "anthropic" needs provider "anthropic", not ${JSON.stringify(provider)}`);
  return value;
}

/** A session's `resultBudget`: `{"call"?: <chars>, "round"?: <chars>}` (API.md v1.2). */
function parseResultBudget(value: unknown): ResultBudget {
  if (!isObject(value)) throw invalid('resultBudget must be an object {"call"?: <characters>, "round"?: <characters>}');
  const unknown = Object.keys(value).filter((k) => k !== 'call' && k !== 'round');
  if (unknown.length > 0)
    throw invalid(
      `resultBudget takes "call" and "round" only, not ${unknown.map((k) => JSON.stringify(k)).join(', ')}`,
    );
  const out: ResultBudget = {};
  for (const k of ['call', 'round'] as const) {
    if (value[k] === undefined) continue;
    const problem = budgetValueProblem(value[k], `resultBudget.${k}`);
    if (problem) throw invalid(problem);
    out[k] = value[k] as number;
  }
  return out;
}

/** Body of `POST .../confirmations/{id}`. */
export function parseConfirmationBody(body: unknown): { approve: boolean; remember: boolean; grant?: GrantRequest } {
  if (!isObject(body) || typeof body.approve !== 'boolean') {
    throw invalid('the body must be {"approve": true | false, "remember"?: true | false, "grant"?: {...}}');
  }
  if (body.remember !== undefined && typeof body.remember !== 'boolean') throw invalid('remember must be a boolean');
  if (body.grant === undefined) return { approve: body.approve, remember: body.remember === true };
  if (body.approve !== true) throw invalid('grant goes with "approve": true only');
  return { approve: true, remember: body.remember === true, grant: parseGrant(body.grant) };
}

/** `grant` of an approval (API.md v1.2): `{"scope": "args" | "tool", "run"?: true, "ttlMs"?: <ms>}`. */
function parseGrant(raw: unknown): GrantRequest {
  const shape = 'grant must be {"scope": "args" | "tool", "run"?: true, "ttlMs"?: <ms>}';
  if (!isObject(raw)) throw invalid(shape);
  const extra = Object.keys(raw).filter((k) => !['scope', 'run', 'ttlMs'].includes(k));
  if (extra.length > 0) throw invalid(`${shape}; unknown field(s) ${extra.join(', ')}`);
  if (raw.scope !== 'args' && raw.scope !== 'tool') throw invalid(`${shape}; scope is ${JSON.stringify(raw.scope)}`);
  if (raw.run !== undefined && raw.run !== true) throw invalid(`${shape}; run may only be true`);
  const ttl = raw.ttlMs;
  if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > MAX_GRANT_TTL_MS))
    throw invalid(`grant.ttlMs must be an integer from 1 to ${MAX_GRANT_TTL_MS} (30 days)`);
  return { scope: raw.scope, ...(raw.run ? { run: true as const } : {}), ...(ttl === undefined ? {} : { ttlMs: ttl }) };
}

/** Most characters of an error answer's message (the model reads it). */
const MAX_INPUT_ERROR_LENGTH = 10_000;

/** Body of `POST .../inputs/{id}`: `{"output": <any JSON>}` or `{"error": "<message>"}`, exactly one of them. */
export function parseInputBody(body: unknown): InputAnswer {
  const shape = 'the body must be {"output": <any JSON>} or {"error": "<message>"}, exactly one of them';
  if (!isObject(body)) throw invalid(shape);
  const hasOutput = Object.hasOwn(body, 'output');
  const hasError = Object.hasOwn(body, 'error');
  if (hasOutput === hasError) throw invalid(`${shape}; got ${hasOutput ? 'both' : 'neither'}`);
  if (hasOutput) return { output: body.output };
  const error = body.error;
  if (typeof error !== 'string' || error.length === 0 || error.length > MAX_INPUT_ERROR_LENGTH)
    throw invalid(`error must be a message of 1 to ${MAX_INPUT_ERROR_LENGTH} characters`);
  return { error };
}
