import type { FastifyInstance } from 'fastify';

interface KnownRoute {
  pattern: RegExp;
  methods: Set<string>;
}

const escapeRegExp = (text: string) => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

/** Index of the `)` closing the `(` at `open`, nested groups and escapes skipped. */
function closingParen(url: string, open: number): number {
  let depth = 0;
  for (let i = open; i < url.length; i++) {
    if (url[i] === '\\') i++;
    else if (url[i] === '(') depth++;
    else if (url[i] === ')' && --depth === 0) return i;
  }
  return url.length;
}

/**
 * A route URL in find-my-way's syntax as a RegExp over request paths: `:name` is one segment,
 * `:name(re)` that regex, `*` the rest of the path. Good enough to tell 405 from 404; routing
 * itself stays fastify's.
 */
function routePattern(url: string): RegExp {
  let source = '';
  for (let i = 0; i < url.length; ) {
    const char = url[i] ?? '';
    if (char === '*') {
      source += '.*';
      i += 1;
    } else if (char === ':' && url[i + 1] !== ':') {
      const name = /^:[A-Za-z0-9_]+/.exec(url.slice(i))?.[0] ?? ':';
      i += name.length;
      if (url[i] === '(') {
        const close = closingParen(url, i);
        // find-my-way anchors a param's regex itself, so it may carry its own ^ and $.
        source += `(?:${url
          .slice(i + 1, close)
          .replace(/^\^/, '')
          .replace(/\$$/, '')})`;
        i = close + 1;
      } else {
        source += '[^/]+';
      }
    } else {
      // `::` is a literal colon in find-my-way.
      source += escapeRegExp(char);
      i += char === ':' ? 2 : 1;
    }
  }
  return new RegExp(`^${source}$`);
}

/**
 * Records every route as it is added (call before registering routes) and answers which methods
 * a request path has, so the not-found handler can say 405 with `Allow` for a wrong method.
 */
export function trackRouteMethods(app: FastifyInstance): (path: string) => string[] {
  const routes = new Map<string, KnownRoute>();
  app.addHook('onRoute', function recordRouteMethods(route) {
    const known = routes.get(route.url) ?? { pattern: routePattern(route.url), methods: new Set<string>() };
    for (const method of [route.method].flat()) known.methods.add(method.toUpperCase());
    routes.set(route.url, known);
  });
  return function allowedMethods(path) {
    const allowed = new Set<string>();
    for (const route of routes.values()) {
      if (route.pattern.test(path)) for (const method of route.methods) allowed.add(method);
    }
    // fastify answers HEAD wherever there is GET (exposeHeadRoutes).
    if (allowed.has('GET')) allowed.add('HEAD');
    return [...allowed].sort();
  };
}
