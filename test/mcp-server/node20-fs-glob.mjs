// Lets the MCP conformance tool (@modelcontextprotocol/conformance) start on Node 20. Its bundle
// imports `globSync` from `fs`, which Node has from 22 on, and uses it only in its `tier-check`
// command (never in `server`). On a Node without it, this hook hands the tool's `fs` import a
// module that re-exports `node:fs` plus a `globSync` that says it needs Node 22.
// Use: node --import ./node20-fs-glob.mjs <conformance>/dist/index.js server --url …
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  const shim = `export * from 'node:fs'; export { default } from 'node:fs';
export function globSync() { throw new Error('fs.globSync needs Node 22: run this command of the conformance tool on Node 22'); }`;
  const hooks = `export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/'))
    return { url: 'data:text/javascript,' + encodeURIComponent(${JSON.stringify(shim)}), shortCircuit: true };
  return next(specifier, context);
}`;
  register(`data:text/javascript,${encodeURIComponent(hooks)}`);
}
