#!/usr/bin/env node
import { readFileSync } from 'node:fs';
// Builds one workspace package: bundles each entry in src/ to dist/ with esbuild.
// Dependencies stay external (node resolves them at run time); workspace packages are
// resolved through their own dist/ the same way. Type checking is `pnpm typecheck`.
import { build } from 'esbuild';

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
// buildEntries: a list of entry files, or {outName: entryFile} to name the bundles.
const listed = pkg.buildEntries ?? ['src/index.ts'];
const entries = Array.isArray(listed) ? listed : Object.entries(listed).map(([out, file]) => ({ in: file, out }));
await build({
  entryPoints: entries,
  outdir: 'dist',
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
