import type { ServerResponse } from 'node:http';
import type { DispatchEvent } from '../events/event-bus.js';

/** A comment line every so often keeps proxies and load balancers from closing an idle stream. */
export const SSE_HEARTBEAT_MS = 15_000;
/**
 * Bytes a slow client may leave unread before we drop it; it reconnects with Last-Event-ID and
 * gets what it missed from the replay window, so nothing is lost and memory stays bounded.
 */
export const SSE_MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** What an EventSource waits before reconnecting. */
const SSE_RETRY_MS = 2_000;

/** One event on the wire: `id:`, `event:` and one `data:` line (JSON.stringify never emits a newline). */
export function formatSseEvent(event: { id: string; name: string; data: unknown }): string {
  const id = event.id.replace(/[\r\n]/g, '');
  return `id: ${id}\nevent: ${event.name}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

export interface SseStream {
  send(event: Pick<DispatchEvent, 'id' | 'name' | 'data'> | { id: string; name: string; data: unknown }): void;
  /** Ends the response (server shutdown); the client will reconnect elsewhere. */
  end(): void;
  /** Runs once the connection is gone, whoever closed it. Runs at once when it already is. */
  onClose(fn: () => void): void;
  readonly closed: boolean;
}

export interface SseOptions {
  heartbeatMs?: number;
  maxBufferedBytes?: number;
}

/** Starts an event stream on a raw response: headers flushed at once, heartbeats, cleanup on close. */
export function openSseStream(res: ServerResponse, options: SseOptions = {}): SseStream {
  const heartbeatMs = options.heartbeatMs ?? SSE_HEARTBEAT_MS;
  const maxBuffered = options.maxBufferedBytes ?? SSE_MAX_BUFFERED_BYTES;
  const closeListeners: Array<() => void> = [];
  let closed = false;

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // nginx buffers responses unless told not to.
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  res.write(`retry: ${SSE_RETRY_MS}\n: connected\n\n`);

  const write = (chunk: string) => {
    if (closed) return;
    res.write(chunk);
    if (res.writableLength > maxBuffered) res.destroy();
  };
  const heartbeat = setInterval(function sendHeartbeat() {
    write(': ping\n\n');
  }, heartbeatMs);
  heartbeat.unref();

  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    for (const fn of closeListeners.splice(0)) {
      try {
        fn();
      } catch {
        // A listener's failure must not keep the others from cleaning up.
      }
    }
  };
  res.on('close', finish);
  res.on('error', finish);

  return {
    send(event) {
      write(formatSseEvent(event));
    },
    end() {
      if (!closed) res.end();
      finish();
    },
    onClose(fn) {
      if (closed) fn();
      else closeListeners.push(fn);
    },
    get closed() {
      return closed;
    },
  };
}
