import type { RawSseEvent, SseParser } from './sse-parser.js';
import type { TdEvent } from './types.js';

const EVENT_NAMES: ReadonlySet<string> = new Set([
  'round.started',
  'confirm.requested',
  'input.requested',
  'tool.result',
  'round.completed',
]);

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export function toEvent(raw: RawSseEvent): TdEvent | undefined {
  if (raw.id === undefined || !EVENT_NAMES.has(raw.event)) return undefined;
  let data: unknown;
  try {
    data = JSON.parse(raw.data);
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null) return undefined;
  // The server is the contract's source of truth for the payload's fields.
  return { id: raw.id, name: raw.event, data } as TdEvent;
}

/** Reads a response body as server-sent events until it ends. */
export async function* readEvents(res: Response, parser: SseParser): AsyncGenerator<RawSseEvent, void, undefined> {
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
