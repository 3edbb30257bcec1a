import { CONCURRENT_BUILTINS } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { Catalog, definitionProblem, resolveSpec } from './catalog.js';

const def = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `${name} tool`,
  parameters: { type: 'object' },
  ...extra,
});

describe('catalog', () => {
  it('tags exactly the 18 concurrent built-ins concurrent, and generate_* serial', () => {
    const catalog = new Catalog();
    const concurrent = catalog
      .all()
      .filter((s) => s.kind === 'builtin' && s.concurrency === 'concurrent')
      .map((s) => s.name)
      .sort();
    expect(CONCURRENT_BUILTINS).toHaveLength(18);
    expect(concurrent).toEqual([...CONCURRENT_BUILTINS].sort());
    expect(catalog.get('generate_image')?.concurrency).toBe('serial');
    expect(catalog.get('generate_audio')?.concurrency).toBe('serial');
  });

  it('makes user tools concurrent only when their own definition says so', () => {
    expect(resolveSpec(def('api_weather'), 'user').concurrency).toBe('serial');
    expect(resolveSpec(def('script_lint', { concurrency: 'concurrent' }), 'user').concurrency).toBe('concurrent');
    expect(resolveSpec(def('ext_x', { concurrency: 'serial' }), 'user').concurrency).toBe('serial');
  });

  it('keeps edit_file, run_command, interactive and MCP tools serial whatever a definition claims', () => {
    expect(resolveSpec(def('edit_file', { concurrency: 'concurrent' }), 'builtin').concurrency).toBe('serial');
    expect(resolveSpec(def('run_command', { concurrency: 'concurrent' }), 'builtin').concurrency).toBe('serial');
    expect(resolveSpec(def('ask_user', { concurrency: 'concurrent', interactive: true }), 'user').concurrency).toBe(
      'serial',
    );
    expect(resolveSpec(def('mcp_search', { concurrency: 'concurrent' }), 'mcp').concurrency).toBe('serial');
  });

  it('never dedupes run_command, edit_file, interactive tools or generate_*', () => {
    const catalog = new Catalog();
    for (const n of ['run_command', 'edit_file', 'generate_image', 'generate_audio'])
      expect(catalog.get(n)?.dedupe).toBe(false);
    expect(resolveSpec(def('ask_user', { interactive: true }), 'user').dedupe).toBe(false);
    expect(catalog.get('read_files')?.dedupe).toBe(true);
  });

  it('flags confirm on run_command, edit_file and http_request, and cacheable on fetch_page, search_web, http_request', () => {
    const catalog = new Catalog();
    const flagged = (f: 'confirm' | 'cacheable') =>
      catalog
        .all()
        .filter((s) => s[f])
        .map((s) => s.name)
        .sort();
    expect(flagged('confirm')).toEqual(['edit_file', 'http_request', 'run_command']);
    expect(flagged('cacheable')).toEqual(['fetch_page', 'http_request', 'search_web']);
    expect(resolveSpec(def('api_pay', { confirm: true }), 'user').confirm).toBe(true);
  });

  it('defers every tool but find_tools, run_tool and client tools', () => {
    const catalog = new Catalog();
    expect(catalog.get('find_tools')?.deferred).toBe(false);
    expect(catalog.get('run_tool')?.deferred).toBe(false);
    expect(catalog.get('read_files')?.deferred).toBe(true);
    expect(resolveSpec(def('ui_pick'), 'client').deferred).toBe(false);
  });

  it('refuses to replace a built-in or register a definition whose schema does not compile', () => {
    const catalog = new Catalog();
    expect(() => catalog.register(def('read_files'))).toThrow(/built-in/);
    expect(definitionProblem(def('api_x', { parameters: { type: 'nonsense' } }))).toMatch(/api_x/);
    expect(definitionProblem(def('bad name!'))).toMatch(/must match/);
    expect(catalog.register(def('api_ok')).kind).toBe('user');
  });
});
