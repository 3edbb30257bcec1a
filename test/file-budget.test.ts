import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FILE_BUDGET_LINES, MAX_FILE_LINES, overBudget, sourceFiles } from './support/layers.js';

// STYLE.md: a source file reads in one sitting. Every package's src is held to FILE_BUDGET_LINES
// (a first line `// long-file: <why>` where a file must be longer) and none passes MAX_FILE_LINES.
// Tests and contract suites are left out (sourceFiles): they are read a case at a time.
const PACKAGES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../packages');

function sources(): Map<string, string> {
  const texts = new Map<string, string>();
  for (const pkg of readdirSync(PACKAGES)) {
    const src = path.join(PACKAGES, pkg, 'src');
    for (const file of sourceFiles(src)) {
      texts.set(path.join('packages', pkg, 'src', file), readFileSync(path.join(src, file), 'utf8'));
    }
  }
  return texts;
}

describe('the file budget', () => {
  it(`keeps every source file under packages/*/src within ${FILE_BUDGET_LINES} lines, or says why (never past ${MAX_FILE_LINES})`, () => {
    expect(overBudget(sources())).toEqual([]);
  });

  it('finds a file over the budget with no reason, and one over the hard limit with a reason', () => {
    const line = 'x;\n';
    expect(overBudget(new Map([['a.ts', line.repeat(FILE_BUDGET_LINES)]]))).toEqual([]);
    expect(overBudget(new Map([['a.ts', line.repeat(FILE_BUDGET_LINES + 1)]]))).toHaveLength(1);
    const said = `// long-file: one table\n${line.repeat(FILE_BUDGET_LINES + 10)}`;
    expect(overBudget(new Map([['a.ts', said]]))).toEqual([]);
    const tooLong = `// long-file: one table\n${line.repeat(MAX_FILE_LINES)}`;
    expect(overBudget(new Map([['a.ts', tooLong]]))[0]).toMatch(/no file may pass/);
  });
});
