import { httpMethod } from './dedupe.js';

const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-api-key']);
/** A query parameter whose name contains one of these, in any case, carries a credential (`?access_token=`, `?api_key=`, `?X-Amz-Signature=`). */
const CREDENTIAL_QUERY_WORDS = ['token', 'secret', 'auth', 'key', 'sig', 'password', 'session'] as const;

/**
 * DESIGN.md step 7: requests carrying credentials are never cached: a credential header, user
 * info in the URL, or a query parameter named like a credential.
 */
export function hasCredentials(args: Record<string, unknown>): boolean {
  const headers = args.headers;
  if (headers && typeof headers === 'object') {
    for (const name of Object.keys(headers)) {
      const n = name.toLowerCase();
      if (CREDENTIAL_HEADERS.has(n) || n.includes('token') || n.includes('secret') || n.includes('auth')) return true;
    }
  }
  if (typeof args.url === 'string') {
    try {
      const u = new URL(args.url);
      if (u.username || u.password) return true;
      for (const name of u.searchParams.keys()) {
        const n = name.toLowerCase();
        if (CREDENTIAL_QUERY_WORDS.some((w) => n.includes(w))) return true;
      }
    } catch {
      return false;
    }
  }
  return false;
}

/** Whether a call's result may be served from, and written to, the 30-minute result cache. */
export function isCacheable(
  tool: { cacheable: boolean } | undefined,
  name: string,
  args: Record<string, unknown>,
): boolean {
  if (!tool?.cacheable) return false;
  if (name === 'http_request' && httpMethod(args) !== 'GET') return false;
  return !hasCredentials(args);
}

/** DESIGN.md step 8: calls of a confirm-flagged tool wait for approval; http_request only when not GET. */
export function needsConfirmation(
  tool: { confirm: boolean } | undefined,
  name: string,
  args: Record<string, unknown>,
): boolean {
  if (!tool?.confirm) return false;
  return name !== 'http_request' || httpMethod(args) !== 'GET';
}
