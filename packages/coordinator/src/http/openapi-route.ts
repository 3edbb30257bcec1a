import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

/** Where the document is served (API.md Operations, v1.1); open even with TD_API_TOKEN set. */
export const OPENAPI_PATH = '/openapi.json';

/**
 * docs/openapi.json of the repository this module belongs to. The nearest package.json above
 * this file is the coordinator's, both for src/http/openapi-route.ts (vitest, tsx) and for the
 * bundles in dist/ (bin/tool-dispatch); the repository root is two levels above it. Read at
 * run time rather than bundled: the build's inputs are src/ only, so a bundled copy could go stale.
 */
export function openApiDocumentPath(moduleUrl: string = import.meta.url): string {
  let dir = path.dirname(fileURLToPath(moduleUrl));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(moduleUrl)}`);
    dir = parent;
  }
  return path.join(dir, '..', '..', 'docs', 'openapi.json');
}

let documentText: Promise<string> | undefined;

/** The document's text, read and checked once per process. */
function loadOpenApiDocument(): Promise<string> {
  documentText ??= (async function readOpenApiDocument() {
    const file = openApiDocumentPath();
    try {
      const text = await readFile(file, 'utf8');
      const doc: unknown = JSON.parse(text);
      if (typeof doc !== 'object' || doc === null || !('openapi' in doc)) throw new Error('no "openapi" field');
      return text;
    } catch (e) {
      throw new Error(`cannot serve ${OPENAPI_PATH}: ${file}: ${e instanceof Error ? e.message : String(e)}`);
    }
  })();
  return documentText;
}

/** GET /openapi.json: docs/openapi.json as it is in the repository, as application/json. */
export async function registerOpenApiRoute(app: FastifyInstance): Promise<void> {
  const text = await loadOpenApiDocument();
  app.get(OPENAPI_PATH, async function openApiDocument(_request, reply) {
    return reply.type('application/json; charset=utf-8').send(text);
  });
}
