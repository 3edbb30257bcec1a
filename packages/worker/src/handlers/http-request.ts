import type { HandlerContext } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { decodeText, httpCall } from '../net/http-client.js';
import { optionalString, optionalStringRecord, requireString } from '../support/args.js';
import { getWithRetryAfter } from './retry-after.js';

export interface HttpRequestOutput {
  /** The URL that answered, after redirects. Beyond API.md. */
  url: string;
  status: number;
  headers: Record<string, string>;
  /** Text, or base64 when the body is not valid text (then `bodyEncoding` says so). */
  body: string;
  bodyEncoding?: 'base64';
  truncated?: true;
}

/**
 * http_request: one HTTP request through the net guard. Any status the server answers,
 * 404 and 500 included, is a normal output; only failing to get an answer is an error.
 */
export async function httpRequest(args: Record<string, unknown>, ctx: HandlerContext): Promise<HttpRequestOutput> {
  const url = requireString(args, 'url');
  const method = (optionalString(args, 'method') ?? 'GET').toUpperCase();
  if (!/^[A-Z]{1,16}$/.test(method))
    throw new ToolError('handler_error', `args.method ${JSON.stringify(method)} is not an HTTP method`);
  const headers = withIdempotencyKey(method, optionalStringRecord(args, 'headers') ?? {}, ctx.idempotencyKey);
  const body = optionalString(args, 'body');
  if (body !== undefined && (method === 'GET' || method === 'HEAD')) {
    throw new ToolError('handler_error', `a ${method} request cannot have a body`);
  }
  const send = () =>
    httpCall(
      { url, method, headers, ...(body === undefined ? {} : { body }) },
      { signal: ctx.signal, allow: ctx.config.httpAllow },
    );
  // Only a GET is tried again after a Retry-After (API.md v1.2); any other method's answer is taken as it is.
  const response = method === 'GET' ? await getWithRetryAfter(send, ctx) : await send();
  const text = decodeText(response.body, response.truncated, response.headers['content-type']);
  const out: HttpRequestOutput = {
    url: response.url,
    status: response.status,
    headers: response.headers,
    body: text ?? response.body.toString('base64'),
  };
  if (text === undefined) out.bodyEncoding = 'base64';
  if (response.truncated) out.truncated = true;
  return out;
}

/**
 * A non-GET request carries the call's idempotency key (API.md "keys for side effects") as
 * `Idempotency-Key`, so the API it changes can tell a retry from a new request; a call that sets
 * that header (any case) keeps its own.
 */
export function withIdempotencyKey(
  method: string,
  headers: Record<string, string>,
  key: string | undefined,
): Record<string, string> {
  if (method === 'GET' || !key) return headers;
  if (Object.keys(headers).some((k) => k.toLowerCase() === 'idempotency-key')) return headers;
  return { ...headers, 'Idempotency-Key': key };
}
