// One tools/call of MCP protocol 2026-07-28 (API.md v1.3 "MCP protocol 2026-07-28 beside
// 2025-11-25"): a round of one call, like a 2025 call, except that the confirm gate and questions
// reach the client as `input_required` results (the revision's multi round-trip requests) and the
// retried call, carrying the answers and the requestState, resumes the same round.
import { randomUUID } from 'node:crypto';
import { isMcpToolName, isValidId } from '@tool-dispatch/shared';
import type { Dispatcher } from '../../dispatcher.js';
import type { DispatchEvent } from '../../events/event-bus.js';
import type { ParkedInput, RoundResponse } from '../../model.js';
import { RequestError } from '../../request-error.js';
import { INVALID_PARAMS, MCP_PROGRESS_MS, McpCallError } from './mcp-call.js';
import {
  APPROVAL_SCHEMA,
  answeredBy,
  approvalMessage,
  approvalOf,
  type CallIds,
  callIdsOf,
  callToolResultOf,
  elicitationRequestId,
  inputAnswerOf,
  inputElicitation,
  META_IDEMPOTENCY_KEY,
} from './mcp-mapping.js';
import { CallProgressNotes } from './mcp-progress.js';

/** How long a requestState stays good: an approval may wait overnight (TD_CONFIRM_TIMEOUT_MS ends it sooner). */
export const REQUEST_STATE_TTL_MS = 24 * 60 * 60 * 1000;

/** One `elicitation/create` the client is asked to fulfil, keyed `td-confirm:<id>` / `td-input:<id>`. */
type InputRequests = Record<string, { method: 'elicitation/create'; params: Record<string, unknown> }>;

/** What one 2026 tools/call needs of its request. */
export interface ModernCallContext {
  /** The tool-dispatch session it acts in. */
  session: string;
  /** Who asks (the token's name): a requestState is good for its principal only. */
  principal: string;
  name: string;
  args: Record<string, unknown>;
  meta: Record<string, unknown> | undefined;
  /** The client declared `elicitation` in this request's capabilities: approvals and questions are asked of it. */
  canAsk: boolean;
  /** The echoed requestState and the answers of a retried call. */
  requestState: string | undefined;
  inputResponses: Record<string, unknown> | undefined;
  /** The session's current run (`mcp-<n>`), for a call that names none. */
  currentRun(): Promise<string>;
  /** Aborted when the client goes away (HTTP: the response stream closed; stdio: notifications/cancelled). */
  signal: AbortSignal;
  /** A notification related to this request (progress). */
  notify(message: { method: string; params: Record<string, unknown> }): Promise<void>;
  /** Hears the session's events (one subscription per session and coordinator). */
  watch(session: string, onEvent: (e: DispatchEvent) => void): Promise<() => void>;
  /** Registers the round's cancel under its key (so a cancel from any coordinator reaches it); returns the removal. */
  hold(key: string, cancel: AbortController): () => void;
  /** Cancels the round of `key` wherever it runs. */
  cancelEverywhere(key: string): Promise<void>;
}

/** What a requestState carries: the round's place, bound to the session and the principal, with an expiry. */
interface RequestState {
  v: 1;
  s: string;
  p: string;
  r: string;
  k: string;
  c: string;
  e: number;
}

/**
 * The requestState of a call: its run, key and call id, bound to the session and principal. Not
 * sealed: it names nothing the same principal could not name in `_meta` itself (a run, a key, a
 * call id of its own session), so tampering gains nothing; a foreign or expired one is refused.
 */
export function encodeRequestState(c: Pick<ModernCallContext, 'session' | 'principal'>, ids: CallIds): string {
  const state: RequestState = {
    v: 1,
    s: c.session,
    p: c.principal,
    r: ids.run,
    k: ids.idempotencyKey as string,
    c: ids.callId,
    e: Date.now() + REQUEST_STATE_TTL_MS,
  };
  return Buffer.from(JSON.stringify(state)).toString('base64url');
}

/** The ids a requestState names, or a JSON-RPC error (-32602) saying why it is not good here. */
export function decodeRequestState(c: Pick<ModernCallContext, 'session' | 'principal'>, text: string): CallIds {
  let s: Partial<RequestState> | undefined;
  try {
    s = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<RequestState>;
  } catch {
    s = undefined;
  }
  const bad = (why: string) => new McpCallError(INVALID_PARAMS, `requestState ${why}; send the call again without it`);
  if (s?.v !== 1 || ![s.r, s.k, s.c].every(isValidId)) throw bad('is not one this server made');
  if (s.s !== c.session || s.p !== c.principal) throw bad('belongs to another session or token');
  if (typeof s.e !== 'number' || s.e < Date.now()) throw bad('has expired');
  return { run: s.r as string, idempotencyKey: s.k as string, callId: s.c as string };
}

/** The call's run, key and call id: from its requestState, else from `_meta` (a key made for a client that can be asked). */
async function idsOf(c: ModernCallContext): Promise<CallIds> {
  if (c.requestState !== undefined) return decodeRequestState(c, c.requestState);
  const meta = c.meta ?? {};
  // A call that may come back as input_required needs a key: its retry resumes the same round.
  const keyed = c.canAsk && !isValidId(meta[META_IDEMPOTENCY_KEY]) ? { [META_IDEMPOTENCY_KEY]: randomUUID() } : {};
  const ids = callIdsOf({ ...meta, ...keyed }, '', () => `mcp-${randomUUID()}`);
  return ids.run === '' ? { ...ids, run: await c.currentRun() } : ids;
}

/**
 * A 2026-07-28 tools/call: the round of one call, answered with its result, or with
 * `input_required` while it waits at the confirm gate or for an answer (only for a client that
 * can be asked; it stays pending in the API and the inbox too, the first answer wins). The round
 * goes on meanwhile; the retried call applies the answers and waits for the same round.
 */
export async function runModernCall(d: Dispatcher, c: ModernCallContext): Promise<Record<string, unknown>> {
  const ids = await idsOf(c);
  const ask = new AskWatch(d, c, ids);
  await ask.start();
  const waiting = new AbortController();
  const cancel = new AbortController();
  const release = ids.idempotencyKey !== undefined ? c.hold(ids.idempotencyKey, cancel) : () => undefined;
  const onGone = () => {
    waiting.abort();
    if (ids.idempotencyKey !== undefined) c.cancelEverywhere(ids.idempotencyKey).catch(() => cancel.abort());
    else cancel.abort();
  };
  c.signal.addEventListener('abort', onGone, { once: true });
  try {
    if (c.requestState !== undefined) await ask.applyAnswers(c.inputResponses ?? {});
    const round = d.submitRound({
      session: c.session,
      run: ids.run,
      calls: [{ id: ids.callId, name: c.name, args: c.args }],
      ...(ids.idempotencyKey !== undefined ? { idempotencyKey: ids.idempotencyKey } : {}),
      signal: waiting.signal,
      cancel: cancel.signal,
    });
    round.then(release, release);
    if (c.requestState !== undefined) await ask.offerPending();
    const first = await Promise.race([
      round.then((r): { done: RoundResponse } => ({ done: r })),
      ask.asked.then((q): { ask: InputRequests } => ({ ask: q })),
    ]);
    if ('ask' in first) {
      round.catch(() => undefined); // goes on: the retry (or the API) answers it
      waiting.abort(); // a retry's wait for the round stops with its answer
      return { resultType: 'input_required', inputRequests: first.ask, requestState: encodeRequestState(c, ids) };
    }
    const result = first.done.results[0];
    if (!result) throw new McpCallError(-32603, 'the round answered no result');
    return callToolResultOf(result, first.done.round, isMcpToolName(result.name));
  } catch (e) {
    if (e instanceof RequestError && e.code === 'idempotency_conflict')
      throw new McpCallError(
        INVALID_PARAMS,
        `idempotency key ${ids.idempotencyKey} was used in run ${ids.run} for a different call; nothing ran (${e.message})`,
      );
    throw e;
  } finally {
    c.signal.removeEventListener('abort', onGone);
    ask.stop();
  }
}

/** A 2026 call's watch: its confirmations and questions (the first becomes input_required), and progress. */
class AskWatch {
  private unsubscribe: (() => void) | undefined;
  private resolve: ((q: InputRequests) => void) | undefined;
  readonly asked: Promise<InputRequests>;
  private timer: NodeJS.Timeout | undefined;
  private readonly progress: CallProgressNotes;
  /** What this request answered: not asked again. */
  private readonly answered = new Set<string>();

  constructor(
    private readonly d: Dispatcher,
    private readonly c: ModernCallContext,
    private readonly ids: CallIds,
  ) {
    this.asked = new Promise((resolve) => {
      this.resolve = resolve;
    });
    this.progress = new CallProgressNotes(c.meta, (params) => c.notify({ method: 'notifications/progress', params }));
  }

  async start(): Promise<void> {
    if (this.c.canAsk || this.progress.token !== undefined)
      this.unsubscribe = await this.c.watch(this.c.session, (e) => this.onEvent(e));
    if (this.progress.token === undefined) return;
    this.progress.notify();
    this.timer = setInterval(() => this.progress.notify(), MCP_PROGRESS_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
  }

  private mine(x: { run?: unknown; callId?: unknown }): boolean {
    return x.run === this.ids.run && x.callId === this.ids.callId;
  }

  private onEvent(e: DispatchEvent): void {
    if (e.name === 'round.started' && e.data.run === this.ids.run) this.progress.moveTo('running');
    else if (e.name === 'confirm.requested' && this.mine(e.data)) {
      this.progress.moveTo('waiting for approval');
      if (typeof e.data.confirmationId === 'string')
        this.offer(confirmRequest(e.data.confirmationId, String(e.data.name), e.data.args));
    } else if (e.name === 'input.requested' && this.mine(e.data)) {
      this.progress.moveTo('waiting for an answer');
      const kind = e.data.kind as ParkedInput['kind'];
      const args =
        typeof e.data.args === 'object' && e.data.args !== null ? (e.data.args as Record<string, unknown>) : {};
      if (typeof e.data.inputId === 'string' && kind !== 'client')
        this.offer(inputRequest(e.data.inputId, { kind, name: String(e.data.name), args }));
    }
  }

  /** The client is asked (once, the first thing): only a client that can be asked, and not what it just answered. */
  private offer(q: InputRequests): void {
    if (!this.c.canAsk) return;
    const fresh = Object.fromEntries(Object.entries(q).filter(([k]) => !this.answered.has(k)));
    if (Object.keys(fresh).length > 0) this.resolve?.(fresh);
  }

  private async pending() {
    const [confirms, inputs] = await Promise.all([
      this.d.pendingConfirmations(this.c.session),
      this.d.pendingInputs(this.c.session),
    ]);
    return { confirms: confirms.filter((x) => this.mine(x)), inputs: inputs.filter((x) => this.mine(x)) };
  }

  /** A retried call's answers, to this call's confirmations and questions only; one already answered (the API, the inbox) stays as it was. */
  async applyAnswers(responses: Record<string, unknown>): Promise<void> {
    if (Object.keys(responses).length === 0) return;
    const { confirms, inputs } = await this.pending();
    for (const [key, value] of Object.entries(responses)) {
      const target = answeredBy(key);
      if (!target) continue;
      this.answered.add(key);
      try {
        if (target.kind === 'confirm' && confirms.some((x) => x.confirmationId === target.id))
          await this.d.answerConfirmation(this.c.session, target.id, { ...approvalOf(value), who: 'mcp-client' });
        const input = inputs.find((x) => x.inputId === target.id);
        if (target.kind === 'input' && input)
          await this.d.answerInput(this.c.session, target.id, inputAnswerOf(input.kind, value));
      } catch {
        // Answered meanwhile (the first answer wins), timed out or cancelled.
      }
    }
  }

  /** On a retry: what still waits (asked before this request listened) is asked again. */
  async offerPending(): Promise<void> {
    if (!this.c.canAsk) return;
    const { confirms, inputs } = await this.pending();
    const q: InputRequests = {};
    for (const x of confirms) Object.assign(q, confirmRequest(x.confirmationId, x.name, x.args));
    for (const x of inputs) if (x.kind !== 'client') Object.assign(q, inputRequest(x.inputId, x));
    this.offer(q);
  }
}

function confirmRequest(confirmationId: string, name: string, args: unknown): InputRequests {
  return {
    [elicitationRequestId('confirm', confirmationId)]: {
      method: 'elicitation/create',
      params: { mode: 'form', message: approvalMessage(name, args), requestedSchema: APPROVAL_SCHEMA },
    },
  };
}

function inputRequest(inputId: string, input: Pick<ParkedInput, 'kind' | 'name' | 'args'>): InputRequests {
  return {
    [elicitationRequestId('input', inputId)]: { method: 'elicitation/create', params: inputElicitation(input) },
  };
}
