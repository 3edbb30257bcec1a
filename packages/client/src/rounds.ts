import { TdApiError } from './errors.js';
import type { AsyncRoundAnswer, RoundAccepted, RoundRunning, RoundState, WireFormat } from './types.js';

/** (v1.3) The path of a round's answer (the `Location` of its async submission), with its query. */
export function roundPath(session: string, run: string, round: string, format?: WireFormat, wait?: number): string {
  const e = encodeURIComponent;
  const query = new URLSearchParams();
  if (format !== undefined && format !== 'neutral') query.set('format', format);
  if (wait !== undefined) query.set('wait', String(wait));
  const q = query.toString();
  return `/v1/sessions/${e(session)}/runs/${e(run)}/rounds/${e(round)}${q ? `?${q}` : ''}`;
}

/** A round's `202` (still running) or `200` (its answer), else the API's error. */
async function roundReply<R>(res: Response): Promise<{ running: unknown } | { done: R }> {
  const text = await res.text();
  if (!res.ok) throw TdApiError.fromResponse(res.status, text);
  const body = JSON.parse(text) as unknown;
  return res.status === 202 ? { running: body } : { done: body as R };
}

/** `POST .../rounds` with `Prefer: respond-async`, read. */
export async function asyncAnswer<R>(res: Response): Promise<AsyncRoundAnswer<R>> {
  const reply = await roundReply<R>(res);
  return 'done' in reply ? { status: 'done', response: reply.done } : (reply.running as RoundAccepted);
}

/** `GET .../rounds/{round}`, read. */
export async function roundState<R>(res: Response): Promise<RoundState<R>> {
  const reply = await roundReply<R>(res);
  return 'done' in reply ? { status: 'done', response: reply.done } : (reply.running as RoundRunning);
}
