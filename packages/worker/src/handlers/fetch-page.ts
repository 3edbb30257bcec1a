import type { HandlerContext } from '@tool-dispatch/shared';
import { decodeText, httpCall } from '../net/http-client.js';
import { requireString } from '../support/args.js';
import { htmlTitle, htmlToText } from '../support/html-text.js';
import { getWithRetryAfter } from './retry-after.js';

export interface FetchPageOutput {
  /** The URL that answered, after redirects. */
  url: string;
  status: number;
  /** The page's <title>, when it has one. Beyond API.md. */
  title?: string;
  text: string;
  truncated?: true;
}

const REQUEST_HEADERS = {
  accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5',
  'accept-encoding': 'gzip, deflate, br',
  'user-agent': 'tool-dispatch/0.1 (+fetch_page)',
};

/** fetch_page: GETs a page through the net guard and reduces it to readable text. */
export async function fetchPage(args: Record<string, unknown>, ctx: HandlerContext): Promise<FetchPageOutput> {
  const url = requireString(args, 'url');
  const response = await getWithRetryAfter(
    () =>
      httpCall({ url, method: 'GET', headers: REQUEST_HEADERS }, { signal: ctx.signal, allow: ctx.config.httpAllow }),
    ctx,
  );
  const contentType = response.headers['content-type'];
  const decoded = decodeText(response.body, response.truncated, contentType);
  const out: FetchPageOutput = { url: response.url, status: response.status, text: '' };
  if (decoded === undefined) {
    out.text = `[${response.body.length} bytes of ${contentType ?? 'binary content'}, not text]`;
  } else if (isHtml(contentType, decoded)) {
    const title = htmlTitle(decoded);
    if (title) out.title = title;
    out.text = htmlToText(decoded);
  } else {
    out.text = decoded;
  }
  if (response.truncated) out.truncated = true;
  return out;
}

function isHtml(contentType: string | undefined, text: string): boolean {
  if (contentType) return /html|xml/i.test(contentType);
  return /^\s*(<!doctype html|<html\b)/i.test(text);
}
