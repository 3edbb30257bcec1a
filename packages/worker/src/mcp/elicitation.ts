import { elicitationAnswerProblem, type HandlerContext } from '@tool-dispatch/shared';

/** What an elicitation answer can be (MCP `ElicitResult`). */
export interface ElicitAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown>;
}

/** The parked input's `args` for a server's `elicitation/create` params (API.md: its `message` and `requestedSchema`). */
export function elicitationArgs(params: unknown): Record<string, unknown> {
  const p = (typeof params === 'object' && params !== null ? params : {}) as Record<string, unknown>;
  const { _meta: _ignored, message, ...rest } = p;
  return { message: typeof message === 'string' ? message : '', ...rest };
}

/**
 * Answers a server's elicitation during a call: the call's question is parked (the call's
 * `requestInput`) and its answer given back; with no call in flight or nobody to ask it is
 * declined, and an answer that times out, is cancelled or posted as an error is `cancel`.
 */
export async function answerElicitation(
  call: HandlerContext | undefined,
  args: Record<string, unknown>,
  serverSignal: AbortSignal,
): Promise<ElicitAnswer> {
  if (!call?.requestInput) return { action: 'decline' };
  const signal = AbortSignal.any([call.signal, serverSignal]);
  const reply = await call.requestInput({ kind: 'elicitation', args }, signal);
  if ('error' in reply) return { action: 'cancel' };
  if (elicitationAnswerProblem(reply.output)) return { action: 'cancel' };
  const o = reply.output as ElicitAnswer;
  return o.action === 'accept' ? { action: 'accept', content: o.content ?? {} } : { action: o.action };
}
