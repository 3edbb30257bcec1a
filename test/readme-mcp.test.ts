import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

// The MCP example of docs/mcp.md (linked from the README), run as written (from the repo root, after
// the build `pnpm test` runs first).
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The first ```sh block after a heading of a markdown file. */
function shBlockAfter(file: string, heading: string): string {
  const readme = `\n${readFileSync(path.join(ROOT, file), 'utf8')}`;
  const from = readme.indexOf(`\n${heading}\n`);
  if (from < 0) throw new Error(`${file} has no heading ${heading}`);
  const block = readme.slice(from).match(/```sh\n([\s\S]*?)```/);
  if (!block?.[1]) throw new Error(`no sh block after ${heading}`);
  return block[1];
}

it('runs the MCP example of docs/mcp.md as written: server-filesystem’s read_text_file through the dispatcher', () => {
  const script = shBlockAfter('docs/mcp.md', '# MCP servers (v1.1)');
  const r = spawnSync('sh', ['-c', `set -e\n${script}`], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
  const answers = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  expect(answers).toHaveLength(3);
  const last = answers.at(-1);
  expect(last.results[0]).toMatchObject({
    id: 'r1',
    name: 'mcp__notes__read_text_file',
    status: 'ok',
    output: {
      content: [{ type: 'text', text: 'hello from MCP\n' }],
      structuredContent: { content: 'hello from MCP\n' },
    },
  });
});
