/** One dispatched server-sent event (WHATWG event-stream fields we use). */
export interface RawSseEvent {
  /** The `id:` field, or undefined when the event set none. */
  id: string | undefined;
  /** The `event:` field, `message` when absent. */
  event: string;
  data: string;
}

/**
 * Incremental event-stream parser: feed it text chunks, get whole events back. Handles CRLF,
 * CR and LF line ends (also split across chunks), comments, multi-line data and `retry:`.
 */
export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private id: string | undefined;
  /** The last `retry:` the server sent, in ms. */
  retryMs: number | undefined;

  push(chunk: string): RawSseEvent[] {
    this.buffer += chunk;
    const out: RawSseEvent[] = [];
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      if (end < 0) break;
      // A lone CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (this.buffer[end] === '\r' && end + 1 === this.buffer.length) break;
      const width = this.buffer.startsWith('\r\n', end) ? 2 : 1;
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + width);
      const event = this.line(line);
      if (event) out.push(event);
    }
    return out;
  }

  private line(line: string): RawSseEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
    return undefined;
  }

  private dispatch(): RawSseEvent | undefined {
    const data = this.data;
    const event = this.event || 'message';
    const id = this.id;
    this.data = [];
    this.event = '';
    this.id = undefined;
    if (data.length === 0) return undefined;
    return { id, event, data: data.join('\n') };
  }
}
