import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// README "Quick start" and docs/operations.md "Node versions" state the Node versions; every
// package.json's `engines` must say the same range, and the docs must quote it.
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (p: string) => readFileSync(path.join(ROOT, p), 'utf8');
const enginesOf = (p: string) => (JSON.parse(read(p)) as { engines?: { node?: string } }).engines?.node;
const PACKAGES = ['client', 'coordinator', 'shared', 'worker'].map((p) => `packages/${p}/package.json`);

describe('the Node versions supported', () => {
  const range = enginesOf('package.json');

  it('are one range in the root and every package', () => {
    expect(range).toBe('^20.19.0 || >=22.12.0');
    expect(Object.fromEntries(PACKAGES.map((p) => [p, enginesOf(p)]))).toEqual(
      Object.fromEntries(PACKAGES.map((p) => [p, range])),
    );
  });

  it('are the range README and docs/operations.md quote', () => {
    expect(read('README.md')).toContain(`\`${range}\``);
    expect(read('docs/operations.md')).toContain(`\`engines\` (the root and every package): \`${range}\``);
  });

  it('include the Node running this suite', () => {
    const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
    expect((major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major > 22).toBe(true);
  });
});
