import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { ApiAnswer, Harness } from './harness.js';

/** The parts of an OpenAPI document these tests read. */
export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, PathItem>;
  components: {
    schemas: Record<string, unknown>;
    responses: Record<string, ResponseObject>;
    parameters: Record<string, ParameterObject>;
  };
  [key: string]: unknown;
}

export type PathItem = Record<string, unknown> & { parameters?: Ref[] };

export interface Operation {
  parameters?: Ref[];
  security?: unknown[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, ResponseObject | Ref>;
  'x-td-mode'?: string;
}

export interface ResponseObject {
  description: string;
  content?: Record<string, { schema: unknown; 'x-td-events'?: Record<string, Ref> }>;
}

export interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: unknown;
}

interface Ref {
  $ref: string;
}

export const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

export const DOCUMENT_FILE = fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));

export function readOpenApiDocument(): OpenApiDocument {
  return JSON.parse(readFileSync(DOCUMENT_FILE, 'utf8')) as OpenApiDocument;
}

const isRef = (value: unknown): value is Ref =>
  typeof value === 'object' && value !== null && typeof (value as Ref).$ref === 'string';

/** The document's operations as [method, path, operation]. */
export function operationsOf(doc: OpenApiDocument): Array<[string, string, Operation]> {
  const all: Array<[string, string, Operation]> = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) all.push([method.toUpperCase(), path, op as Operation]);
    }
  }
  return all;
}

/** A path with its parameters blanked, so `/a/:id` (fastify) and `/a/{thing}` (OpenAPI) compare equal. */
export const routeShape = (path: string) => path.replace(/:[A-Za-z0-9_]+/g, '{}').replace(/\{[^}]*\}/g, '{}');

/**
 * Every route fastify registered, read from `printRoutes({ commonPrefix: false })`: one line per
 * tree node, four columns of `│`, `├──`, `└──` or spaces per level, a node's methods in
 * parentheses. HEAD twins (fastify's exposeHeadRoutes) are left out: the document has GET.
 */
export function servedRoutes(app: Harness['app']): Array<{ method: string; path: string }> {
  const routes: Array<{ method: string; path: string }> = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^((?:[│ ] {3})*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = (match[1] ?? '').length / 4;
    stack.length = depth;
    stack.push(match[2] ?? '');
    for (const method of match[3]?.split(', ') ?? []) {
      if (method !== 'HEAD') routes.push({ method, path: stack.join('') });
    }
  }
  return routes;
}

const DOCUMENT_ID = 'https://tool-dispatch.invalid/openapi.json';
const escapeToken = (token: string) => encodeURIComponent(token.replace(/~/g, '~0').replace(/\//g, '~1'));
/** RFC 3339 date-time, as the history's `at` is written (toISOString). */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The document's schemas compiled by ajv (JSON Schema 2020-12, OpenAPI 3.1's dialect) in strict
 * mode, so a misspelt keyword or a dangling $ref fails here rather than passing silently.
 */
export class DocumentSchemas {
  private readonly ajv = new Ajv2020({
    strict: true,
    allErrors: true,
    allowUnionTypes: true,
    formats: { 'date-time': DATE_TIME },
  });

  constructor(readonly doc: OpenApiDocument) {
    // The document is not a schema itself, but holds them: its top-level fields are opaque to ajv.
    for (const keyword of Object.keys(doc)) this.ajv.addKeyword(keyword);
    this.ajv.addSchema({ ...doc, $id: DOCUMENT_ID });
  }

  /** The validator of the schema at a JSON pointer's tokens inside the document. */
  at(tokens: readonly string[]): ValidateFunction {
    const validate = this.ajv.getSchema(`${DOCUMENT_ID}#/${tokens.map(escapeToken).join('/')}`);
    if (!validate) throw new Error(`no schema at /${tokens.join('/')}`);
    return validate;
  }

  component(name: string): ValidateFunction {
    return this.at(['components', 'schemas', name]);
  }

  errorsOf(validate: ValidateFunction): string {
    return this.ajv.errorsText(validate.errors, { separator: '\n' });
  }
}

/** The documented operation a request goes to: the path template its URL matches. */
export function operationFor(doc: OpenApiDocument, method: string, url: string): { path: string; op: Operation } {
  const pathname = url.split('?')[0] ?? '';
  for (const [path, item] of Object.entries(doc.paths)) {
    const pattern = new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    const op = item[method.toLowerCase()];
    if (op && pattern.test(pathname)) return { path, op: op as Operation };
  }
  throw new Error(`${method} ${pathname} is not in the document`);
}

/** Follows a `#/components/responses/X` reference. */
function resolveResponse(
  doc: OpenApiDocument,
  response: ResponseObject | Ref,
): { tokens: string[]; response: ResponseObject } {
  if (!isRef(response)) return { tokens: [], response };
  const name = response.$ref.replace('#/components/responses/', '');
  const target = doc.components.responses[name];
  if (!target) throw new Error(`dangling ${response.$ref}`);
  return { tokens: ['components', 'responses', name], response: target };
}

/**
 * Checks one real answer against the document: its status is listed for the operation (not only
 * covered by `default`), its Content-Type is a documented media type, and a JSON body matches
 * that response's schema. Returns the failures, empty when it conforms.
 */
export function answerProblems(
  schemas: DocumentSchemas,
  request: { method: string; url: string },
  answer: Pick<ApiAnswer, 'status' | 'headers' | 'json'>,
): string[] {
  const { doc } = schemas;
  const { path, op } = operationFor(doc, request.method, request.url);
  const where = `${request.method} ${path} ${answer.status}`;
  const listed = op.responses[String(answer.status)];
  if (!listed) return [`${where}: status not documented (responses: ${Object.keys(op.responses).join(', ')})`];
  const { tokens, response } = resolveResponse(doc, listed);
  const mediaType = (answer.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
  const content = response.content?.[mediaType];
  if (!content) return [`${where}: Content-Type ${mediaType} not documented`];
  if (mediaType !== 'application/json') return [];
  const base =
    tokens.length > 0 ? tokens : ['paths', path, request.method.toLowerCase(), 'responses', String(answer.status)];
  const validate = schemas.at([...base, 'content', mediaType, 'schema']);
  return validate(answer.json) ? [] : [`${where}: ${schemas.errorsOf(validate)}`];
}

/** Checks a request body against the operation's documented request schema. */
export function requestProblems(schemas: DocumentSchemas, request: { method: string; url: string; body: unknown }) {
  const { path, op } = operationFor(schemas.doc, request.method, request.url);
  if (!op.requestBody) return [`${request.method} ${path} documents no request body`];
  const validate = schemas.at([
    'paths',
    path,
    request.method.toLowerCase(),
    'requestBody',
    'content',
    'application/json',
    'schema',
  ]);
  return validate(request.body) ? [] : [`${request.method} ${path} request: ${schemas.errorsOf(validate)}`];
}
