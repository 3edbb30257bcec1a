// `pnpm test:jaeger` without Go (issue 32): its first step says so in one line and exits
// non-zero, never a silent pass. This test needs no Go, so it runs in `pnpm test`; the Jaeger
// test itself (test/jaeger) runs under `pnpm test:jaeger`.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { GO_MISSING } from './jaeger/go.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

it('test:jaeger says in one line that Go is missing and exits 1', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/jaeger/build.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
    // GO names a go command that is not there: the script must not fall back to another one.
    env: { ...process.env, GO: '/nonexistent/go' },
    timeout: 30_000,
  });
  expect(r.status).toBe(1);
  expect(r.stdout).toBe('');
  expect(r.stderr.trim().split('\n')).toEqual([GO_MISSING]);
});
