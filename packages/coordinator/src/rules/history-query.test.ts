import type { CallResult } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../model.js';
import { errorHistory, fileHistory, historyPathProblem } from './history-query.js';

let n = 0;
const entry = (name: string, status: CallResult['status'], extra: Partial<HistoryEntry> = {}): HistoryEntry => ({
  id: `c${++n}`,
  name,
  status,
  durationMs: 1,
  round: `rnd_${n}`,
  run: 'r1',
  at: new Date(1_700_000_000_000 + n * 1000).toISOString(),
  ...extra,
});

describe('fileHistory', () => {
  it('lists the file tools that named the path, newest first, as pass 3 normalises it', () => {
    const read = entry('read_files', 'ok', { paths: ['a.txt', 'b.txt'], output: { files: [] } });
    const edit = entry('edit_file', 'ok', { paths: ['a.txt'], output: { path: 'a.txt', bytes: 3, created: false } });
    const other = entry('read_files', 'ok', { paths: ['c.txt'] });
    const { entries } = fileHistory([read, other, edit], { path: './x/../a.txt' });
    expect(entries).toEqual([
      expect.objectContaining({ id: edit.id, name: 'edit_file', status: 'ok', bytes: 3, created: false }),
      expect.objectContaining({ id: read.id, name: 'read_files', status: 'ok' }),
    ]);
  });

  it('lists failed and denied calls of the path too, with their error', () => {
    const denied = entry('edit_file', 'denied', { paths: ['a.txt'], error: { code: 'denied', message: 'no' } });
    const { entries } = fileHistory([denied], { path: 'a.txt' });
    expect(entries).toEqual([expect.objectContaining({ status: 'denied', error: { code: 'denied', message: 'no' } })]);
  });

  it('lists a find_files whose found paths include the path, and a download of it with its content type', () => {
    const found = entry('find_files', 'ok', { output: { paths: ['src/a.ts', 'src/b.ts'] } });
    const missed = entry('find_files', 'ok', { output: { paths: ['src/c.ts'] } });
    const download = entry('download_file', 'ok', {
      paths: ['src/a.ts'],
      output: { path: 'src/a.ts', bytes: 9, contentType: 'text/plain' },
    });
    const { entries } = fileHistory([found, missed, download], { path: 'src/a.ts' });
    expect(entries.map((e) => (e as { id: string }).id)).toEqual([download.id, found.id]);
    expect(entries[0]).toMatchObject({ bytes: 9, contentType: 'text/plain' });
  });

  it('flags every run_command as mayHaveTouched, with its exit code', () => {
    const cmd = entry('run_command', 'ok', { output: { exitCode: 2, stdout: '', stderr: '' } });
    expect(fileHistory([cmd], { path: 'a.txt' }).entries).toEqual([
      expect.objectContaining({ name: 'run_command', mayHaveTouched: true, exitCode: 2 }),
    ]);
  });

  it('ignores other tools, and never shows the contents a read returned', () => {
    const calc = entry('calculate', 'ok', { output: { value: 1 } });
    const read = entry('read_files', 'ok', {
      paths: ['a.txt'],
      output: { files: [{ path: 'a.txt', content: 'secret' }] },
    });
    const { entries } = fileHistory([calc, read], { path: 'a.txt' });
    expect(entries).toHaveLength(1);
    expect(JSON.stringify(entries)).not.toContain('secret');
  });

  it('gives at most `limit` entries, 20 by default', () => {
    const many = Array.from({ length: 30 }, () => entry('read_files', 'ok', { paths: ['a.txt'] }));
    expect(fileHistory(many, { path: 'a.txt' }).entries).toHaveLength(20);
    expect(fileHistory(many, { path: 'a.txt', limit: 3 }).entries).toEqual(
      many
        .slice(-3)
        .reverse()
        .map((e) => expect.objectContaining({ id: e.id })),
    );
  });
});

describe('errorHistory', () => {
  it('lists every result that is not ok, deduped or cached, newest first', () => {
    const all = [
      entry('calculate', 'ok'),
      entry('calculate', 'invalid', { error: { code: 'invalid', message: 'bad' } }),
      entry('read_files', 'deduped'),
      entry('fetch_page', 'cached'),
      entry('run_command', 'error', { error: { code: 'timeout', message: 'slow' } }),
      entry('find_tools', 'schema'),
      entry('nope', 'refused', { error: { code: 'refused', message: 'not loaded' } }),
    ];
    const { entries } = errorHistory(all, {});
    expect(entries.map((e) => (e as { status: string }).status)).toEqual(['refused', 'schema', 'error', 'invalid']);
    expect(entries[2]).toEqual({
      round: all[4]?.round,
      run: 'r1',
      at: all[4]?.at,
      id: all[4]?.id,
      name: 'run_command',
      status: 'error',
      error: { code: 'timeout', message: 'slow' },
    });
  });

  it('lists one tool only when given, at most `limit`', () => {
    const all = [
      entry('calculate', 'invalid'),
      entry('run_command', 'denied'),
      entry('calculate', 'error'),
      entry('calculate', 'invalid'),
    ];
    expect(errorHistory(all, { tool: 'calculate', limit: 2 }).entries.map((e) => (e as { id: string }).id)).toEqual([
      all[3]?.id,
      all[2]?.id,
    ]);
  });
});

describe('historyPathProblem', () => {
  it('refuses absolute paths and paths that leave the workspace, by their spelling', () => {
    expect(historyPathProblem('/etc/passwd')).toMatch(/absolute/);
    expect(historyPathProblem('C:/x.txt')).toMatch(/absolute/);
    expect(historyPathProblem('\\srv\\x.txt')).toMatch(/absolute/);
    expect(historyPathProblem('..')).toMatch(/escapes/);
    expect(historyPathProblem('../a.txt')).toMatch(/escapes/);
    expect(historyPathProblem('sub/../../a.txt')).toMatch(/escapes/);
    expect(historyPathProblem('..\\a.txt')).toMatch(/escapes/);
  });

  it('lets workspace paths through, however they are spelled', () => {
    for (const p of ['a.txt', './a.txt', 'sub/../a.txt', 'd/e/f.txt', '..a.txt', '.'])
      expect(historyPathProblem(p), p).toBeUndefined();
  });
});
