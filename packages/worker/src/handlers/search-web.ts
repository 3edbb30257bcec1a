import type { HandlerContext } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { decodeText, httpCall } from '../net/http-client.js';
import { isPlainObject, requireString } from '../support/args.js';
import { errorMessage } from '../support/node-error.js';

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

/** Most results one search returns. */
export const MAX_SEARCH_RESULTS = 20;

/**
 * search_web: asks the operator's SearxNG instance (TD_SEARCH_URL) for `query`. The operator
 * chose that URL, so the private-address guard does not apply to it.
 */
export async function searchWeb(
  args: Record<string, unknown>,
  ctx: HandlerContext,
): Promise<{ results: SearchResult[] }> {
  const query = requireString(args, 'query');
  if (!ctx.config.searchUrl) throw new ToolError('handler_error', 'search_web is not configured: set TD_SEARCH_URL');
  let endpoint: URL;
  try {
    endpoint = new URL(ctx.config.searchUrl);
  } catch {
    throw new ToolError('handler_error', 'search_web is misconfigured: TD_SEARCH_URL is not a valid URL');
  }
  endpoint.searchParams.set('q', query);
  endpoint.searchParams.set('format', 'json');
  const response = await httpCall(
    { url: endpoint.href, method: 'GET', headers: { accept: 'application/json' } },
    { signal: ctx.signal, allow: false },
  );
  if (response.status < 200 || response.status > 299) {
    throw new ToolError('handler_error', `the search service answered HTTP ${response.status}`);
  }
  return { results: parseResults(decodeText(response.body, response.truncated, response.headers['content-type'])) };
}

function parseResults(text: string | undefined): SearchResult[] {
  let data: unknown;
  try {
    data = JSON.parse(text ?? '');
  } catch (e) {
    throw new ToolError('handler_error', `the search service did not answer JSON: ${errorMessage(e)}`);
  }
  if (!isPlainObject(data) || !Array.isArray(data.results)) {
    throw new ToolError('handler_error', 'the search service answered JSON without a results array');
  }
  const results: SearchResult[] = [];
  for (const item of data.results) {
    if (!isPlainObject(item) || typeof item.url !== 'string') continue;
    results.push({
      title: typeof item.title === 'string' ? item.title : item.url,
      url: item.url,
      snippet: typeof item.content === 'string' ? item.content : '',
    });
    if (results.length === MAX_SEARCH_RESULTS) break;
  }
  return results;
}
