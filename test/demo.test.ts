import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The Quick start's demo, as a person runs it (bin/tool-dispatch after the build `pnpm test` runs first).
const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('tool-dispatch demo', () => {
  const run = spawnSync(path.join(ROOT, 'bin/tool-dispatch'), ['demo'], {
    encoding: 'utf8',
    timeout: 90_000,
    env: { ...process.env, PORT: '', TD_MCP_CONFIG: '', REDIS_URL: '' },
  });
  const out = run.stdout;
  /** The table row of a call (its first cell is the call id). */
  const row = (id: string) => out.split('\n').find((l) => l.startsWith(`│ ${id} `)) ?? '';

  it('runs to the end and prints every round as a table', () => {
    expect(run.status, run.stderr).toBe(0);
    for (let n = 1; n <= 10; n++) expect(out).toContain(`Round ${n} ·`);
    expect(out).toMatch(/^history: \d+ results recorded/m);
  });

  it('shows the rules of the passes on the rows they apply to', () => {
    expect(row('c6')).toMatch(/dedupe hit/);
    expect(row('c8')).toMatch(/invalid args/);
    expect(row('c15')).toMatch(/cache hit/);
    expect(row('c16')).toMatch(/no such tool/);
    expect(row('c22')).toMatch(/person/);
    // API.md v1.3: the command ran in a sandbox, where /etc/shadow does not exist.
    expect(row('c11s')).toMatch(/run_command .*\bok\b.*exit 0: sandboxed: no \/etc\/shadow here/);
  });

  it('runs an MCP server’s tools (server-filesystem over stdio): serial calls ok, bad args invalid', () => {
    expect(row('c24')).toMatch(/mcp__notes__list_directory.*\bok\b.*README\.md/);
    expect(row('c25')).toMatch(/mcp__notes__read_text_file.*\bok\b.*twice/);
    expect(row('c26')).toMatch(/invalid args/);
  });

  it('makes a round through /mcp with the official SDK client: ok, deduped, approved by elicitation, invalid', () => {
    expect(out).toMatch(
      /^Round 11 · an MCP client \(the official SDK\) on http:\/\/127\.0\.0\.1:\d+\/mcp: MCP session \S+$/m,
    );
    expect(out).toMatch(
      /tools\/list: \d+ tools, each with its full schema \(calculate read-only, run_command destructive; no run_tool: true\)/,
    );
    expect(row('m1')).toMatch(/calculate .*│ ok +│ \d+ +│ false +│ \{"value":42\}/);
    expect(row('m2')).toMatch(/calculate .*│ deduped +│ \d+ +│ false +│ \{"value":42\}/);
    expect(out).toMatch(/> elicitation\/create from \/mcp: "[^\n]*run_command[^\n]*; the MCP client approves/);
    expect(row('m3')).toMatch(
      /run_command .*│ ok +│ \d+ +│ false +│ \{"exitCode":0,"stdout":"approved through the MCP client/,
    );
    expect(row('m4')).toMatch(/read_files .*│ invalid +│ \d+ +│ true +│ Invalid args for read_files/);
  });
});
