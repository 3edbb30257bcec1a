import type { HandlerContext } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { optionalString, optionalStringRecord, requireString } from '../args.js';
import { decodeText, httpCall } from '../http-client.js';

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
  const headers = optionalStringRecord(args, 'headers') ?? {};
  const body = optionalString(args, 'body');
  if (body !== undefined && (method === 'GET' || method === 'HEAD')) {
    throw new ToolError('handler_error', `a ${method} request cannot have a body`);
  }
  const response = await httpCall(
    { url, method, headers, ...(body === undefined ? {} : { body }) },
    { signal: ctx.signal, allow: ctx.config.httpAllow },
  );
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
