import type { IncomingHttpHeaders } from 'node:http';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { TextDecoder } from 'node:util';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { isToolError, MAX_STREAM_BYTES, ToolError } from '@tool-dispatch/shared';
import { Agent, type Dispatcher, request } from 'undici';
import { abortError } from '../support/abort.js';
import { CappedText } from '../support/capped-text.js';
import { errorCode, errorMessage } from '../support/node-error.js';
import { type CheckedTarget, checkUrl, parseHttpUrl, pinnedLookup, type ResolveHost } from './net-guard.js';

/** Redirects followed before giving up. */
export const MAX_REDIRECTS = 10;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Dropped when a redirect leaves the origin, as browsers do. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'transfer-encoding'];

export interface HttpCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/** How an exchange may connect. */
export interface HttpExchangeOptions {
  signal: AbortSignal;
  /**
   * TD_HTTP_ALLOW entries; `false` turns the private-address guard off (only for URLs the
   * operator set, such as TD_SEARCH_URL).
   */
  allow: readonly string[] | false;
  resolveHost?: ResolveHost;
}

export interface HttpCallOptions extends HttpExchangeOptions {
  maxBytes?: number;
}

/** The response that ended an exchange (after redirects), its body not read yet. */
export interface HttpResponse {
  /** The URL that answered, after redirects. */
  url: string;
  status: number;
  headers: Record<string, string>;
  /** The body with its content codings undone; valid until the consumer settles. */
  body: Readable;
}

export interface HttpResult {
  /** The URL that answered, after redirects. */
  url: string;
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  truncated: boolean;
}

/** One HTTP exchange for a tool, its body read into memory and cut at `maxBytes`. */
export function httpCall(call: HttpCall, options: HttpCallOptions): Promise<HttpResult> {
  const maxBytes = options.maxBytes ?? MAX_STREAM_BYTES;
  return withHttpResponse(call, options, async function readBody(response) {
    const { body, truncated } = await readCapped(response.body, maxBytes);
    return { url: response.url, status: response.status, headers: response.headers, body, truncated };
  });
}

/**
 * One HTTP exchange for a tool: redirects followed by hand (each hop checked by the net guard
 * and its connection pinned to the checked address), then the final response handed to
 * `consume`, its body decoded (a decompression bomb is the consumer's cap to stop), the whole
 * bounded by `signal`. The body and the connection are closed once `consume` settles, read or
 * not; what it throws, other than a ToolError, is reported as the request failing (or as the
 * abort, once `signal` aborted).
 */
export async function withHttpResponse<T>(
  call: HttpCall,
  options: HttpExchangeOptions,
  consume: (response: HttpResponse) => Promise<T>,
): Promise<T> {
  let current = { ...call, headers: lowerCaseKeys(call.headers) };
  for (let hop = 0; ; hop++) {
    const target = await checkHop(current.url, options);
    const agent = createAgent(target, options.allow !== false);
    try {
      const response = await send(current, target.url, agent, options.signal);
      const location = response.headers.location;
      if (REDIRECT_STATUSES.has(response.statusCode) && typeof location === 'string') {
        await response.body.dump().catch(() => undefined);
        if (hop >= MAX_REDIRECTS) {
          throw new ToolError(
            'handler_error',
            `stopped after ${MAX_REDIRECTS} redirects (last from ${target.url.href})`,
          );
        }
        current = nextHop(current, target.url, location, response.statusCode);
        continue;
      }
      const encoding = response.headers['content-encoding'];
      const body = decodeBody(response.body, typeof encoding === 'string' ? encoding : undefined);
      // A consumer may stop before reading the body (download_file on a 404): its errors are then
      // nobody's to handle, and an 'error' without a listener would crash the process.
      body.on('error', function ignoreUnreadBodyError() {});
      try {
        return await consume({
          url: target.url.href,
          status: response.statusCode,
          headers: flattenHeaders(response.headers),
          body,
        });
      } finally {
        body.destroy();
      }
    } catch (e) {
      throw toToolError(e, target.url, options.signal);
    } finally {
      agent.destroy().catch(() => undefined);
    }
  }
}

async function checkHop(url: string, options: HttpExchangeOptions): Promise<CheckedTarget> {
  if (options.allow === false) return { url: parseHttpUrl(url), addresses: [] };
  return checkUrl(url, {
    allow: options.allow,
    signal: options.signal,
    ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
  });
}

function createAgent(target: CheckedTarget, pin: boolean): Agent {
  // One agent per hop, destroyed after it: no connection outlives the check that allowed it.
  return new Agent(pin ? { connect: { lookup: pinnedLookup(target) } } : {});
}

function send(call: HttpCall, url: URL, agent: Agent, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
  return request(url, {
    method: call.method as Dispatcher.HttpMethod,
    headers: call.headers,
    ...(call.body === undefined ? {} : { body: call.body }),
    dispatcher: agent,
    signal,
  });
}

function nextHop(call: HttpCall, from: URL, location: string, status: number): HttpCall {
  let to: URL;
  try {
    to = new URL(location, from);
  } catch {
    throw new ToolError('handler_error', `${from.href} redirected to an invalid URL ${JSON.stringify(location)}`);
  }
  const headers = { ...call.headers };
  if (to.origin !== from.origin) for (const name of CREDENTIAL_HEADERS) delete headers[name];
  const method = call.method.toUpperCase();
  const becomesGet = status === 303 ? method !== 'HEAD' : (status === 301 || status === 302) && method === 'POST';
  if (!becomesGet) return { ...call, url: to.href, headers };
  for (const name of BODY_HEADERS) delete headers[name];
  return { url: to.href, method: 'GET', headers };
}

async function readCapped(body: Readable, maxBytes: number) {
  const text = new CappedText(maxBytes);
  for await (const chunk of body) {
    if (!text.push(chunk as Buffer)) {
      body.destroy();
      break;
    }
  }
  return { body: text.bytes(), truncated: text.truncated };
}

/** The body with its content codings undone (gzip, deflate, br); unknown codings pass through as bytes. */
function decodeBody(body: Readable, contentEncoding: string | undefined): Readable {
  const codings = (contentEncoding ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity')
    .reverse();
  if (codings.length === 0) return body;
  if (codings.length > 3)
    throw new ToolError('handler_error', `the response has too many content codings: ${contentEncoding}`);
  const decoders: Transform[] = [];
  for (const coding of codings) {
    const decoder = DECODERS[coding];
    if (!decoder) return body;
    decoders.push(decoder());
  }
  // The cap is applied to the decoded bytes, so a compression bomb stops at maxBytes.
  return pipeline([body, ...decoders], () => {}) as unknown as Readable;
}

const DECODERS: Record<string, () => Transform> = {
  gzip: () => createGunzip(),
  'x-gzip': () => createGunzip(),
  deflate: () => createInflate(),
  br: () => createBrotliDecompress(),
};

function toToolError(e: unknown, url: URL, signal: AbortSignal): unknown {
  if (isToolError(e)) return e;
  if (signal.aborted) return abortError(signal, `the request to ${url.host} was abandoned`);
  const cause = e instanceof Error && e.cause instanceof Error ? e.cause : e;
  const code = errorCode(cause);
  return new ToolError(
    'handler_error',
    `the request to ${url.href} failed: ${errorMessage(cause)}${code && !errorMessage(cause).includes(code) ? ` (${code})` : ''}`,
  );
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/**
 * The body as text in the charset its content type names (UTF-8 by default), or undefined
 * when it is not valid text in it. A character cut in half by truncation is left out.
 */
export function decodeText(body: Buffer, truncated: boolean, contentType: string | undefined): string | undefined {
  const charset = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1] ?? 'utf-8';
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset, { fatal: true });
  } catch {
    decoder = new TextDecoder('utf-8', { fatal: true });
  }
  try {
    return decoder.decode(body, { stream: truncated });
  } catch {
    return undefined;
  }
}
