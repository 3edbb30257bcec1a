import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The README and docs/ (and the pages they link to) point only at what exists: every relative link
// names a file or folder of the repo, and an anchor (`#…`) names a heading of the file it points
// into (GitHub's slugs). README and docs/ name the contract and rules by their files in the repo,
// not by documents kept elsewhere.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOCS = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Other pages the README links to: their links are checked too. */
const LINKED = ['deploy/README.md', 'ARCHITECTURE.md', 'SECURITY.md', 'bench/README.md'];

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** The text outside fenced code blocks, where links are links. */
const prose = (markdown: string) => markdown.replace(/^```[\s\S]*?^```$/gm, '');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading = ''] of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading
      .replace(/`/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** The relative links of a markdown file: [text](target), targets without a scheme. */
function linksOf(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] ?? '')
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** A markdown table's rows after the one whose first cell is `first`, up to its end. */
function tableAfter(markdown: string, heading: string): string[] {
  const from = markdown.indexOf(`\n${heading}\n`);
  if (from < 0) throw new Error(`no heading ${heading}`);
  const lines = markdown.slice(from).split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  return lines.slice(start, end);
}

describe('links in README.md and docs/', () => {
  it.each([...DOCS, ...LINKED])('%s links only to files and headings that exist', (file) => {
    const broken = linksOf(read(file)).filter((link) => {
      const [target = '', anchor] = link.split('#');
      const resolved = target === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), target));
      const full = path.join(ROOT, resolved);
      if (!existsSync(full)) return true;
      if (anchor === undefined || statSync(full).isDirectory() || !resolved.endsWith('.md')) return false;
      return !anchorsOf(read(resolved)).has(anchor);
    });
    expect(broken).toEqual([]);
  });

  it.each(DOCS)('%s names no document that is not in the repo (DESIGN.md, API.md)', (file) => {
    expect(read(file).match(/\b(?:DESIGN|API)\.md\b/g) ?? []).toEqual([]);
  });

  it('finds a broken link and a missing anchor (the checker can fail)', () => {
    const links = linksOf('see [a](docs/nope.md) and [b](README.md#no-such-heading) and [c](https://x.y)');
    expect(links).toEqual(['docs/nope.md', 'README.md#no-such-heading']);
    expect(existsSync(path.join(ROOT, 'docs/nope.md'))).toBe(false);
    expect(anchorsOf(read('README.md')).has('no-such-heading')).toBe(false);
    expect(anchorsOf('## `GET /v1/tools` — the catalog\n## MCP servers (v1.1)\n## A b\n## A b')).toEqual(
      new Set(['get-v1tools--the-catalog', 'mcp-servers-v11', 'a-b', 'a-b-1']),
    );
  });
});

describe('docs/libraries.md', () => {
  it('names every dependency of every package.json (a scope/* row covers its scope)', () => {
    const rows = read('docs/libraries.md')
      .split('\n')
      .filter((l) => l.startsWith('| '));
    const manifests = [
      'package.json',
      ...readdirSync(path.join(ROOT, 'packages')).map((p) => `packages/${p}/package.json`),
    ];
    const names = manifests.flatMap((file) => {
      const pkg = JSON.parse(read(file)) as Record<string, Record<string, string> | undefined>;
      return Object.keys({ ...pkg.dependencies, ...pkg.devDependencies });
    });
    const covered = (name: string) => {
      const [scope, tail] = name.startsWith('@') ? name.split('/') : [];
      return rows.some(
        (row) =>
          row.includes(name) ||
          (scope && tail && (row.includes(`${scope}/*`) || (row.includes(scope) && row.includes(tail)))),
      );
    };
    expect(names.length).toBeGreaterThan(30);
    expect([...new Set(names)].filter((n) => !covered(n))).toEqual([]);
  });
});

describe('the limits', () => {
  it('are the same table in the README and in docs/api.md', () => {
    expect(tableAfter(read('docs/api.md'), '## Limits')).toEqual(tableAfter(read('README.md'), '## Limits'));
  });
});
