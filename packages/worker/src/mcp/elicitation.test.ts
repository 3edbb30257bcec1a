import type { HandlerContext, InputReply, InputRequest, InputRequester } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { answerElicitation, elicitationArgs } from './elicitation.js';

/** A call in flight whose questions `reply` answers; `asked` records each question and the signal it came with. */
function callAsking(reply: (request: InputRequest) => InputReply | Promise<InputReply>, signal = never()) {
  const asked: Array<{ request: InputRequest; signal: AbortSignal }> = [];
  const requestInput: InputRequester = async (request, s) => {
    asked.push({ request, signal: s });
    return reply(request);
  };
  const call = {
    signal,
    workspace: '/tmp/ws',
    session: 's-1',
    tenant: 't-1',
    run: 'r-1',
    round: 'rd-1',
    callId: 'c-1',
    timeoutMs: 60_000,
    requestInput,
  } as unknown as HandlerContext;
  return { call, asked };
}

const never = () => new AbortController().signal;
const ARGS = { message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } };

describe('answerElicitation', () => {
  it('declines when no call is in flight', async () => {
    expect(await answerElicitation(undefined, ARGS, never())).toEqual({ action: 'decline' });
  });

  it('declines when the call in flight cannot ask (no requestInput)', async () => {
    const { call } = callAsking(() => ({ output: { action: 'accept', content: {} } }));
    const { requestInput: _none, ...mute } = call;
    expect(await answerElicitation(mute as HandlerContext, ARGS, never())).toEqual({ action: 'decline' });
  });

  it('parks the question as an input of kind elicitation with the args given', async () => {
    const { call, asked } = callAsking(() => ({ output: { action: 'decline' } }));
    await answerElicitation(call, ARGS, never());
    expect(asked.map((a) => a.request)).toEqual([{ kind: 'elicitation', args: ARGS }]);
  });

  it('accepts with the content the person gave', async () => {
    const { call } = callAsking(() => ({ output: { action: 'accept', content: { name: 'Ada', age: 36 } } }));
    expect(await answerElicitation(call, ARGS, never())).toEqual({
      action: 'accept',
      content: { name: 'Ada', age: 36 },
    });
  });

  it('accepts with empty content when the answer has none', async () => {
    const { call } = callAsking(() => ({ output: { action: 'accept' } }));
    expect(await answerElicitation(call, ARGS, never())).toEqual({ action: 'accept', content: {} });
  });

  it.each(['decline', 'cancel'] as const)('passes a %s on without content', async (action) => {
    const { call } = callAsking(() => ({ output: { action } }));
    expect(await answerElicitation(call, ARGS, never())).toEqual({ action });
  });

  it('cancels when the question ends in an error (timed out, cancelled or posted as an error)', async () => {
    const { call } = callAsking(() => ({ error: 'the input timed out' }));
    expect(await answerElicitation(call, ARGS, never())).toEqual({ action: 'cancel' });
  });

  it.each([
    ['not an object', 'yes'],
    ['without an action', { content: { name: 'Ada' } }],
    ['with an unknown action', { action: 'ok' }],
    ['with content that is not an object', { action: 'accept', content: 'Ada' }],
    ['with content beside a decline', { action: 'decline', content: { name: 'Ada' } }],
    ['null', null],
  ])('cancels on an answer %s', async (_what, output) => {
    const { call } = callAsking(() => ({ output }));
    expect(await answerElicitation(call, ARGS, never())).toEqual({ action: 'cancel' });
  });

  it('asks with a signal that aborts with the call', async () => {
    const controller = new AbortController();
    const { call, asked } = callAsking(() => ({ output: { action: 'cancel' } }), controller.signal);
    await answerElicitation(call, ARGS, never());
    const signal = asked[0]?.signal as AbortSignal;
    expect(signal.aborted).toBe(false);
    controller.abort(new Error('run cancelled'));
    expect(signal.aborted).toBe(true);
  });

  it('asks with a signal that aborts with the server request', async () => {
    const server = new AbortController();
    const { call, asked } = callAsking(() => ({ output: { action: 'cancel' } }));
    await answerElicitation(call, ARGS, server.signal);
    const signal = asked[0]?.signal as AbortSignal;
    expect(signal.aborted).toBe(false);
    server.abort(new Error('server cancelled the request'));
    expect(signal.aborted).toBe(true);
  });
});

describe('elicitationArgs', () => {
  it('keeps the message and requestedSchema of the request', () => {
    expect(elicitationArgs(ARGS)).toEqual(ARGS);
  });

  it('drops _meta', () => {
    const args = elicitationArgs({ ...ARGS, _meta: { progressToken: 7, 'io.modelcontextprotocol/related-task': {} } });
    expect(args).toEqual(ARGS);
    expect(args).not.toHaveProperty('_meta');
  });

  it('keeps other fields the server sent (mode, url)', () => {
    expect(
      elicitationArgs({ mode: 'url', message: 'Sign in', url: 'https://a.example/x', elicitationId: 'e1' }),
    ).toEqual({ mode: 'url', message: 'Sign in', url: 'https://a.example/x', elicitationId: 'e1' });
  });

  it('gives an empty message when the request has none', () => {
    expect(elicitationArgs({ requestedSchema: { type: 'object' } })).toEqual({
      message: '',
      requestedSchema: { type: 'object' },
    });
    expect(elicitationArgs(undefined)).toEqual({ message: '' });
    expect(elicitationArgs(null)).toEqual({ message: '' });
  });

  it('gives an empty message when the message is not a string', () => {
    expect(elicitationArgs({ message: 42 }).message).toBe('');
  });
});
