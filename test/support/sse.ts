import { SseParser } from '@tool-dispatch/client';

export interface ReadEvent {
  id: string | undefined;
  name: string;
  /** The `data:` JSON, or its text when it is not JSON. */
  data: unknown;
}

/**
 * Reads an event-stream response body until it ends or is aborted, handing each raw chunk and
 * each parsed event to the sink as it arrives. Resolves when the stream is over.
 */
export async function readEventStream(
  body: ReadableStream<Uint8Array> | null,
  sink: { onText(text: string): void; onEvent(event: ReadEvent): void },
): Promise<void> {
  if (!body) return;
  const parser = new SseParser();
  const decoder = new TextDecoder();
  try {
    for await (const chunk of body) {
      const text = decoder.decode(chunk, { stream: true });
      sink.onText(text);
      for (const e of parser.push(text)) {
        let data: unknown = e.data;
        try {
          data = JSON.parse(e.data);
        } catch {
          // not JSON: keep the text
        }
        sink.onEvent({ id: e.id, name: e.event, data });
      }
    }
  } catch {
    // aborted
  }
}
