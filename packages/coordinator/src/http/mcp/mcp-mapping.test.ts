import type { CallResult } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import type { CatalogView } from '../../dispatcher.js';
import { decodeRequestState, encodeRequestState } from './mcp-2026-call.js';
import {
  annotationsOf,
  answeredBy,
  approvalOf,
  callIdsOf,
  callToolResultOf,
  elicitationRequestId,
  inputAnswerOf,
  inputElicitation,
  mcpToolsOf,
  taskElicitationRequestId,
} from './mcp-mapping.js';
import { tokenSessionOf } from './mcp-routes.js';

const result = (over: Partial<CallResult>): CallResult =>
  ({ id: 'c1', name: 'calculate', status: 'ok', output: { value: 42 }, durationMs: 3, ...over }) as CallResult;
const entry = (over: Partial<CatalogView>): CatalogView =>
  ({
    name: 't',
    description: 'd',
    concurrency: 'concurrent',
    confirm: false,
    deferred: false,
    cacheable: false,
    parameters: { type: 'object' },
    source: 'builtin',
    ...over,
  }) as CatalogView;

describe('the tools/call result of a round’s result (API.md "MCP server")', () => {
  it('gives any tool’s object output as one text block of its JSON and as structuredContent, isError false', () => {
    const r = callToolResultOf(result({}), 'rnd_1', false);
    expect(r).toEqual({
      content: [{ type: 'text', text: '{"value":42}' }],
      structuredContent: { value: 42 },
      isError: false,
      _meta: { 'tool-dispatch/result': { id: 'c1', status: 'ok', round: 'rnd_1', durationMs: 3 } },
    });
  });

  it('gives a non-object output as text without structuredContent', () => {
    const r = callToolResultOf(result({ output: [1, 2] }), 'rnd_1', false);
    expect(r.content).toEqual([{ type: 'text', text: '[1,2]' }]);
    expect(r).not.toHaveProperty('structuredContent');
  });

  it('passes an MCP tool’s content and structuredContent untouched', () => {
    const output = { content: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }], structuredContent: { a: 1 } };
    const r = callToolResultOf(result({ name: 'mcp__s__t', output }), 'rnd_1', true);
    expect(r.content).toBe(output.content);
    expect(r.structuredContent).toBe(output.structuredContent);
    expect(r.isError).toBe(false);
  });

  it('is not an error for deduped and cached, with where a deduped one came from', () => {
    const d = callToolResultOf(result({ status: 'deduped', dedupedFrom: 'c0', dedupedFromRound: 'rnd_0' }), 'r', false);
    expect(d.isError).toBe(false);
    expect(d._meta).toMatchObject({ 'tool-dispatch/result': { dedupedFrom: 'c0', dedupedFromRound: 'rnd_0' } });
    expect(callToolResultOf(result({ status: 'cached' }), 'r', false).isError).toBe(false);
  });

  it('gives every other status one text block with the error’s message, and the error in _meta', () => {
    for (const status of ['error', 'denied', 'invalid', 'unknown', 'refused'] as const) {
      const error = {
        code: status === 'error' ? 'handler_error' : status,
        message: `it was ${status}`,
      } as NonNullable<CallResult['error']>;
      const r = callToolResultOf(result({ status, output: undefined, error }), 'r', false);
      expect(r).toMatchObject({ isError: true, content: [{ type: 'text', text: `it was ${status}` }] });
      expect(r._meta).toMatchObject({ 'tool-dispatch/result': { status, error } });
    }
  });

  it('gives a schema answer as its message and the definition', () => {
    const output = { tool: { name: 'x' }, message: 'This is the schema of x' };
    const r = callToolResultOf(result({ status: 'schema', output }), 'r', false);
    expect(r.isError).toBe(true);
    expect(JSON.parse((r.content as Array<{ text: string }>)[0]?.text ?? '')).toEqual(output);
  });
});

describe('the ids of a tools/call', () => {
  const fresh = () => 'mcp-fresh';
  it('takes the run, key and call id from _meta, else the MCP session, mcp-<key>, a fresh one', () => {
    expect(callIdsOf(undefined, 'S', fresh)).toEqual({ run: 'S', callId: 'mcp-fresh' });
    expect(callIdsOf({ 'tool-dispatch/idempotencyKey': 'k1' }, 'S', fresh)).toEqual({
      run: 'S',
      idempotencyKey: 'k1',
      callId: 'mcp-k1',
    });
    expect(
      callIdsOf(
        { 'tool-dispatch/run': 'r1', 'tool-dispatch/callId': 'c9', 'tool-dispatch/idempotencyKey': 'k1' },
        'S',
        fresh,
      ),
    ).toEqual({ run: 'r1', idempotencyKey: 'k1', callId: 'c9' });
  });

  it('ignores values that are not ids', () => {
    expect(callIdsOf({ 'tool-dispatch/run': 'a b', 'tool-dispatch/callId': 7 }, 'S', fresh)).toEqual({
      run: 'S',
      callId: 'mcp-fresh',
    });
  });
});

describe('annotations in tools/list', () => {
  it('marks read-only built-ins, gated built-ins destructive, and keeps an MCP server’s own', () => {
    expect(annotationsOf(entry({ name: 'read_files' }))).toMatchObject({ readOnlyHint: true });
    expect(annotationsOf(entry({ name: 'run_command', confirm: true }))).toMatchObject({ destructiveHint: true });
    expect(annotationsOf(entry({ name: 'http_request' }))).toBeUndefined();
    const ann = { title: 'Echo', readOnlyHint: true, openWorldHint: false };
    expect(annotationsOf(entry({ name: 'mcp__s__echo', source: 'mcp', annotations: ann }))).toEqual(ann);
    expect(annotationsOf(entry({ name: 'mcp__s__x', source: 'mcp' }))).toBeUndefined();
  });

  it('lists the tools array as MCP tools with object input schemas', () => {
    const tools = mcpToolsOf(
      [{ name: 'calculate', description: 'c', parameters: { type: 'object', properties: {} } }],
      [entry({ name: 'calculate' })],
    );
    expect(tools).toEqual([
      {
        name: 'calculate',
        description: 'c',
        inputSchema: { type: 'object', properties: {} },
        annotations: { readOnlyHint: true, destructiveHint: false },
      },
    ]);
  });
});

describe('elicitations and their answers', () => {
  it('approves only accept with approve true, remember only then', () => {
    expect(approvalOf({ action: 'accept', content: { approve: true, remember: true } })).toEqual({
      approve: true,
      remember: true,
    });
    expect(approvalOf({ action: 'accept', content: { approve: false, remember: true } })).toEqual({
      approve: false,
      remember: false,
    });
    expect(approvalOf({ action: 'decline' })).toEqual({ approve: false, remember: false });
    expect(approvalOf({ action: 'cancel' })).toEqual({ approve: false, remember: false });
    expect(approvalOf('garbage')).toEqual({ approve: false, remember: false });
  });

  it('asks ask_user with its question and choices, and answers {answer}; a decline ends it with an error', () => {
    const p = inputElicitation({
      kind: 'interactive',
      name: 'ask_user',
      args: { question: 'Q?', choices: ['a', 'b'] },
    });
    expect(p).toMatchObject({
      message: 'Q?',
      requestedSchema: { properties: { answer: { type: 'string', enum: ['a', 'b'] } }, required: ['answer'] },
    });
    expect(inputAnswerOf('interactive', { action: 'accept', content: { answer: 'a' } })).toEqual({
      output: { answer: 'a' },
    });
    expect(inputAnswerOf('interactive', { action: 'decline' })).toEqual({ error: 'the person declined to answer' });
  });

  it('passes a server’s elicitation through and hands back its answer as it came', () => {
    const schema = { type: 'object', properties: { n: { type: 'string' } } };
    expect(
      inputElicitation({ kind: 'elicitation', name: 'mcp__s__t', args: { message: 'M', requestedSchema: schema } }),
    ).toEqual({ mode: 'form', message: 'M', requestedSchema: schema });
    expect(inputAnswerOf('elicitation', { action: 'accept', content: { n: 'x' } })).toEqual({
      output: { action: 'accept', content: { n: 'x' } },
    });
    expect(inputAnswerOf('elicitation', { action: 'decline' })).toEqual({ output: { action: 'decline' } });
  });

  it('names what an elicitation answers in its JSON-RPC id, and nothing for ids it did not make', () => {
    expect(answeredBy(elicitationRequestId('confirm', 'cf_1'))).toEqual({ kind: 'confirm', id: 'cf_1' });
    expect(answeredBy(elicitationRequestId('input', 'in_r_0'))).toEqual({ kind: 'input', id: 'in_r_0' });
    expect(answeredBy(3)).toBeUndefined();
    expect(answeredBy('td-confirm:bad id')).toBeUndefined();
    expect(answeredBy('other')).toBeUndefined();
    // (v1.3) A task's question names its task, so the answer finds the task's session.
    const task = '0b7c6f0e-9c1d-4c51-8a4e-2f3d4b5a6c7d';
    expect(answeredBy(taskElicitationRequestId(task, 'confirm', 'cf_1'))).toEqual({
      kind: 'confirm',
      id: 'cf_1',
      taskId: task,
    });
    expect(answeredBy(taskElicitationRequestId(task, 'input', 'in_r_0'))).toEqual({
      kind: 'input',
      id: 'in_r_0',
      taskId: task,
    });
    expect(answeredBy('td-task:not-a-task:confirm:cf_1')).toBeUndefined();
  });
});

describe('tokenSessionOf (2026-07-28: the session of a request naming none)', () => {
  it('is mcp-<token name> when that is an id, else mcp- and 40 hex digits of the name’s SHA-256', () => {
    expect(tokenSessionOf('a-backend')).toBe('mcp-a-backend');
    expect(tokenSessionOf('anonymous')).toBe('mcp-anonymous');
    const mail = tokenSessionOf('alice@example.com');
    expect(mail).toMatch(/^mcp-[0-9a-f]{40}$/);
    expect(tokenSessionOf('alice@example.com')).toBe(mail);
    expect(tokenSessionOf('bob@example.com')).not.toBe(mail);
    expect(tokenSessionOf('x'.repeat(128))).toMatch(/^mcp-[0-9a-f]{40}$/);
  });
});

describe('requestState (2026-07-28)', () => {
  const c = { session: 'mcp-a', principal: 'a' };
  const ids = { run: 'mcp-3', idempotencyKey: 'k1', callId: 'mcp-k1' };
  it('round-trips the run, key and call id for the same session and token', () => {
    expect(decodeRequestState(c, encodeRequestState(c, ids))).toEqual(ids);
  });
  it('is refused for another session or token, or when it is no state of ours', () => {
    const state = encodeRequestState(c, ids);
    expect(() => decodeRequestState({ ...c, principal: 'b' }, state)).toThrow(/another session or token/);
    expect(() => decodeRequestState({ ...c, session: 'mcp-b' }, state)).toThrow(/another session or token/);
    expect(() => decodeRequestState(c, 'not-base64-json')).toThrow(/not one this server made/);
  });
});
