import { type AnnouncedTool, CONCURRENT_BUILTINS, DEFAULT_TOOL_TIMEOUT_MS } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { announcedSpec, Catalog, definitionProblem, resolveSpec } from './catalog.js';

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

/** An MCP tool as a worker announces it (catalog name mcp__<server>__<tool>). */
const announced = (server: string, tool: string, extra: Partial<AnnouncedTool> = {}): AnnouncedTool => ({
  name: `mcp__${server}__${tool}`,
  description: `${tool} of ${server}`,
  parameters: { type: 'object', properties: { x: { type: 'number' } } },
  server,
  tool,
  confirm: false,
  dedupe: false,
  ...extra,
});

/** The catalog's MCP tool names, sorted. */
const mcpNames = (catalog: Catalog) =>
  catalog
    .all()
    .filter((s) => s.kind === 'mcp')
    .map((s) => s.name)
    .sort();

/** A log that keeps its lines. */
function lines() {
  const kept: string[] = [];
  return { kept, log: (line: string) => kept.push(line) };
}

describe('announcedSpec', () => {
  it('makes an MCP tool serial, deferred and not cacheable, whatever the server says', () => {
    const spec = announcedSpec(announced('everything', 'echo', { dedupe: true }));
    expect(spec).toMatchObject({
      name: 'mcp__everything__echo',
      kind: 'mcp',
      concurrency: 'serial',
      deferred: true,
      cacheable: false,
      interactive: false,
    });
  });

  it('takes the description and the inputSchema as its parameters', () => {
    const t = announced('fs', 'read_text_file');
    const spec = announcedSpec(t);
    expect(spec.description).toBe(t.description);
    expect(spec.parameters).toEqual(t.parameters);
  });

  it('takes confirm, dedupe, server and timeoutMs from the announcement', () => {
    const flagged = announcedSpec(announced('gate', 'write', { confirm: true, dedupe: true, timeoutMs: 5_000 }));
    expect(flagged).toMatchObject({ confirm: true, dedupe: true, server: 'gate', timeoutMs: 5_000 });
    const plain = announcedSpec(announced('web', 'fetch', { confirm: false, dedupe: false }));
    expect(plain).toMatchObject({ confirm: false, dedupe: false, server: 'web' });
  });

  it('gives an announcement without timeoutMs the default deadline', () => {
    expect(announcedSpec(announced('s', 'x')).timeoutMs).toBe(DEFAULT_TOOL_TIMEOUT_MS);
  });
});

describe('Catalog.adopt', () => {
  it('lists each announced tool under its catalog name with its announced spec', () => {
    const catalog = new Catalog();
    const tools = [announced('a', 'one', { confirm: true }), announced('b', 'two', { timeoutMs: 900 })];
    catalog.adopt(tools);
    expect(mcpNames(catalog)).toEqual(['mcp__a__one', 'mcp__b__two']);
    expect(catalog.get('mcp__a__one')).toEqual(announcedSpec(tools[0] as AnnouncedTool));
    expect(catalog.get('mcp__b__two')).toEqual(announcedSpec(tools[1] as AnnouncedTool));
  });

  it('keeps the built-ins and user tools beside the MCP tools', () => {
    const catalog = new Catalog();
    catalog.register(def('api_weather'));
    const before = catalog.all().length;
    catalog.adopt([announced('a', 'one')]);
    expect(catalog.all()).toHaveLength(before + 1);
    expect(catalog.get('api_weather')?.kind).toBe('user');
    expect(catalog.get('read_files')?.kind).toBe('builtin');
  });

  describe('when the same array comes again', () => {
    it('does nothing (the array is compared by identity)', () => {
      const catalog = new Catalog();
      const tools = [announced('a', 'one')];
      catalog.adopt(tools);
      // A change made to the array itself is not read again: the directory hands out a new array for a change.
      tools.push(announced('a', 'two'));
      catalog.adopt(tools);
      expect(mcpNames(catalog)).toEqual(['mcp__a__one']);
    });

    it('does not take back a name a user tool was given meanwhile', () => {
      const catalog = new Catalog();
      const tools = [announced('a', 'one')];
      catalog.adopt(tools);
      catalog.register(def('mcp__a__one'));
      catalog.adopt(tools);
      expect(catalog.get('mcp__a__one')?.kind).toBe('user');
    });
  });

  describe('when a new array comes', () => {
    it('replaces the MCP tools: a tool that left is gone, a new one listed', () => {
      const catalog = new Catalog();
      catalog.adopt([announced('a', 'one'), announced('a', 'two')]);
      catalog.adopt([announced('a', 'two'), announced('b', 'three')]);
      expect(mcpNames(catalog)).toEqual(['mcp__a__two', 'mcp__b__three']);
      expect(catalog.get('mcp__a__one')).toBeUndefined();
    });

    it('takes the new spec of a tool still there', () => {
      const catalog = new Catalog();
      catalog.adopt([announced('a', 'one', { confirm: false, description: 'old' })]);
      catalog.adopt([announced('a', 'one', { confirm: true, description: 'new' })]);
      expect(catalog.get('mcp__a__one')).toMatchObject({ confirm: true, description: 'new' });
    });

    it('empties the MCP tools on an empty array', () => {
      const catalog = new Catalog();
      catalog.adopt([announced('a', 'one')]);
      catalog.adopt([]);
      expect(mcpNames(catalog)).toEqual([]);
    });
  });

  describe('when a name is taken', () => {
    it('refuses a tool named like a built-in, keeping the built-in, and says so in a log line', () => {
      const catalog = new Catalog();
      const builtin = catalog.get('read_files');
      const { kept, log } = lines();
      catalog.adopt([announced('fs', 'x', { name: 'read_files' }), announced('fs', 'y')], log);
      expect(catalog.get('read_files')).toBe(builtin);
      expect(mcpNames(catalog)).toEqual(['mcp__fs__y']);
      expect(kept).toEqual([
        `catalog: MCP server fs's tool "x" (read_files) refused: the name is taken by the builtin tool`,
      ]);
    });

    it('refuses a tool named like a user tool, keeping the user tool', () => {
      const catalog = new Catalog();
      catalog.register(def('mcp__fs__read'));
      const { kept, log } = lines();
      catalog.adopt([announced('fs', 'read')], log);
      expect(catalog.get('mcp__fs__read')?.kind).toBe('user');
      expect(kept).toEqual([
        `catalog: MCP server fs's tool "read" (mcp__fs__read) refused: the name is taken by the user tool`,
      ]);
    });

    it('refuses the second of two announced tools with one name, naming the server of the first', () => {
      const catalog = new Catalog();
      const { kept, log } = lines();
      catalog.adopt([announced('a', 'x', { name: 'mcp__same' }), announced('b', 'y', { name: 'mcp__same' })], log);
      expect(catalog.get('mcp__same')?.server).toBe('a');
      expect(kept).toEqual([
        `catalog: MCP server b's tool "y" (mcp__same) refused: the name is taken by the MCP server a's tool`,
      ]);
    });

    it('logs a refusal once, however many announcements repeat it', () => {
      const catalog = new Catalog();
      const { kept, log } = lines();
      for (let i = 0; i < 3; i++) catalog.adopt([announced('fs', 'x', { name: 'read_files' })], log);
      expect(kept).toHaveLength(1);
    });
  });

  describe('when a definition is not one', () => {
    it('refuses a tool whose schema does not compile, naming the problem', () => {
      const catalog = new Catalog();
      const { kept, log } = lines();
      catalog.adopt([announced('s', 'bad', { parameters: { type: 'nonsense' } }), announced('s', 'good')], log);
      expect(mcpNames(catalog)).toEqual(['mcp__s__good']);
      expect(kept).toHaveLength(1);
      expect(kept[0]).toMatch(/^catalog: MCP server s's tool "bad" \(mcp__s__bad\) refused: tool mcp__s__bad: .*type/);
    });

    it('refuses a tool whose schema is not an object', () => {
      const catalog = new Catalog();
      const { kept, log } = lines();
      catalog.adopt([announced('s', 'bad', { parameters: 'a string' as unknown as Record<string, unknown> })], log);
      expect(mcpNames(catalog)).toEqual([]);
      expect(kept[0]).toMatch(/refused: .*parameters must be a JSON schema object/);
    });

    it('refuses a name a catalog cannot hold', () => {
      const catalog = new Catalog();
      const { kept, log } = lines();
      catalog.adopt([announced('s', 'bad', { name: `mcp__s__${'x'.repeat(70)}` })], log);
      expect(mcpNames(catalog)).toEqual([]);
      expect(kept[0]).toMatch(/refused: tool name .* must match/);
    });
  });
});
