import type { HandlerContext } from '@tool-dispatch/shared';
import type { HttpResult } from '../net/http-client.js';

/** Times a GET answered 429 or 503 with a Retry-After is tried again, at most (API.md v1.2). */
export const MAX_RETRY_AFTER_RETRIES = 2;

/** Keeps this much of the deadline for the last try itself. */
const DEADLINE_MARGIN_MS = 500;

/**
 * The wait a `Retry-After` asks for in ms (delay-seconds or an HTTP date), or undefined when the
 * header is absent or unreadable.
 */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * A GET, tried again after a 429/503's `Retry-After` when the wait fits in the call's deadline, at
 * most twice; then the last answer is taken as it is (the model sees the 429/503). The wait ends
 * with the call's signal (cancelled, or the deadline).
 */
export async function getWithRetryAfter(
  get: () => Promise<HttpResult>,
  ctx: Pick<HandlerContext, 'signal' | 'timeoutMs'>,
): Promise<HttpResult> {
  const deadline = Date.now() + ctx.timeoutMs - DEADLINE_MARGIN_MS;
  let response = await get();
  for (let retry = 0; retry < MAX_RETRY_AFTER_RETRIES; retry++) {
    if (response.status !== 429 && response.status !== 503) return response;
    const waitMs = retryAfterMs(response.headers['retry-after']);
    if (waitMs === undefined || Date.now() + waitMs >= deadline) return response;
    await sleep(waitMs, ctx.signal);
    response = await get();
  }
  return response;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
