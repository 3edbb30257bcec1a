import type { ErrorBody } from './types.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function isErrorBody(v: unknown): v is ErrorBody {
  return isRecord(v) && isRecord(v.error) && typeof v.error.code === 'string' && typeof v.error.message === 'string';
}

/** A 4xx/5xx answer of the coordinator: the HTTP status plus API.md's `{error: {code, message}}`. */
export class TdApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'TdApiError';
  }

  /** Builds the error from a response whose body was read as text. */
  static fromResponse(status: number, text: string): TdApiError {
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON (a proxy's error page): keep the text.
    }
    if (isErrorBody(body)) return new TdApiError(status, body.error.code, body.error.message, body);
    return new TdApiError(status, `http_${status}`, `HTTP ${status}: ${text.slice(0, 200)}`, body);
  }
}
