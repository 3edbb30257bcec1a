import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { invalidationsOf, isDedupable } from '../packages/coordinator/src/rules/dedupe.js';
import { FAILURES, STATUSES } from '../packages/shared/src/result.js';

// README's rules table and status line, kept equal to the code they describe (they drifted once:
// the error codes of v1.2 and v1.3, write_todo never deduped, download_file's invalidation).
const README = readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'README.md'), 'utf8');
const codesIn = (text: string) => [...text.matchAll(/`([a-z_]+)`/g)].map((m) => m[1] as string);
const rowOf = (rule: string) => {
  const row = README.split('\n').find((l) => new RegExp(`^\\| \\d \\| ${rule} \\|`).test(l));
  if (!row) throw new Error(`README has no rules-table row "${rule}"`);
  return row;
};

describe("README's status line and rules table", () => {
  const line = README.slice(README.indexOf('**Statuses:**'), README.indexOf('A handler that ran and'));

  it('lists every status, and under error every code a call that errs can have (FAILURES)', () => {
    expect(line, 'README has no **Statuses:** line').not.toBe('');
    const errorPart = /`error` \(code ([^)]*)\)/.exec(line)?.[1] ?? '';
    const errorCodes = new Set(Object.values(FAILURES).flatMap((f) => (f.status === 'error' ? [f.code] : [])));
    expect(new Set(codesIn(errorPart))).toEqual(errorCodes);
    expect(new Set(codesIn(line.replace(errorPart, '')))).toEqual(new Set(STATUSES));
  });

  it('names in the dedupe row every built-in tool that is never deduped', () => {
    const never = codesIn(rowOf('dedupe').split('Never for')[1] ?? '');
    const builtins = [
      'read_files',
      'find_files',
      'edit_file',
      'run_command',
      'http_request',
      'fetch_page',
      'download_file',
      'search_web',
      'calculate',
      'write_todo',
      'file_history',
      'error_history',
    ];
    // http_request as the row says it: non-GET (a GET is deduped).
    const notDeduped = builtins.filter((name) => !isDedupable(undefined, name, { method: 'POST' }));
    expect(notDeduped.filter((name) => !never.includes(name))).toEqual([]);
    expect(never.filter((name) => builtins.includes(name) && !notDeduped.includes(name))).toEqual([]);
  });

  it('names in the invalidation row every tool whose success invalidates, and every tool it invalidates', () => {
    const row = rowOf('invalidation');
    const writers = ['edit_file', 'download_file', 'run_command', 'read_files', 'http_request', 'write_todo'];
    for (const name of writers) {
      const dropped = invalidationsOf(name, { path: 'a.txt', command: 'true' }, true).map((i) => i.tool);
      if (dropped.length === 0) continue;
      expect(row, `${name} invalidates ${dropped.join(', ')}`).toContain(`\`${name}\``);
      for (const tool of dropped) expect(row, `${name} invalidates ${tool}`).toContain(`\`${tool}\``);
    }
    expect(row).toContain('`error_history`');
  });
});
