import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';

// The README's agent loop ("An agent loop") compiles as written under the examples' strict
// settings, against the built client and the real `openai` package. It is written to a folder
// under examples/dist/ (ignored by git) so that it resolves packages as the examples do. Needs the
// build (`pnpm test` builds first).

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
let dir = '';

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('compiles the README’s agent loop under --strict with the typed client and the openai package', async () => {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## An agent loop\n'));
  const code = section.match(/```ts\n([\s\S]*?)```/)?.[1];
  if (!code || readme.indexOf('\n## An agent loop\n') < 0)
    throw new Error('README.md has no ```ts block under "An agent loop"');
  expect(code).toContain("from '@tool-dispatch/client'");
  expect(code.trim().split('\n').length).toBeLessThanOrEqual(20);
  await mkdir(path.join(ROOT, 'examples', 'dist'), { recursive: true });
  dir = await mkdtemp(path.join(ROOT, 'examples', 'dist', 'readme-loop-'));
  await writeFile(path.join(dir, 'main.ts'), code);
  const tsconfig = {
    extends: path.join(ROOT, 'examples', 'tsconfig.base.json'),
    compilerOptions: { rootDir: '.', noEmit: true },
    files: ['main.ts'],
  };
  await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  const compiled = await run(process.execPath, [tsc, '-p', dir]).then(
    () => '',
    (e: { stdout?: string }) => e.stdout ?? String(e),
  );
  expect(compiled).toBe('');
}, 120_000);
