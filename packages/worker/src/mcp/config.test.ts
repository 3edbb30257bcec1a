import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '@tool-dispatch/shared';
import { afterAll, describe, expect, it } from 'vitest';
import { loadMcpConfig, parseMcpConfig } from './config.js';

const FILE = '/etc/td/mcp.json';
const parse = (doc: unknown) => parseMcpConfig(JSON.stringify(doc), FILE);
const servers = (entries: Record<string, unknown>) => parse({ mcpServers: entries });

/** The ConfigError `run` throws (failing the test when it throws nothing or something else). */
function refusal(run: () => unknown): ConfigError {
  try {
    run();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError, none was thrown');
}

/** Expects `entries` refused with a one-line message naming the file, the server (when given) and `problem`. */
function expectRefused(entries: Record<string, unknown>, problem: RegExp, server?: string): void {
  const { message } = refusal(() => servers(entries));
  expect(message).toContain(`TD_MCP_CONFIG ${FILE}`);
  if (server !== undefined) expect(message).toContain(`server ${JSON.stringify(server)}`);
  expect(message).toMatch(problem);
  expect(message).not.toContain('\n');
}

describe('parseMcpConfig', () => {
  describe('when the file is well formed', () => {
    it('reads a stdio server with its args, env and cwd', () => {
      const { servers: list, warnings } = servers({
        fs: { command: 'npx', args: ['-y', 'server-filesystem', '/data'], env: { DEBUG: '1' }, cwd: '/srv' },
      });
      expect(warnings).toEqual([]);
      expect(list).toEqual([
        {
          name: 'fs',
          transport: 'stdio',
          command: 'npx',
          args: ['-y', 'server-filesystem', '/data'],
          env: { DEBUG: '1' },
          cwd: '/srv',
          confirm: false,
        },
      ]);
    });

    it('gives a bare stdio server no args, an empty env and no cwd', () => {
      const [s] = servers({ bare: { command: 'mcp-bare' } }).servers;
      expect(s).toEqual({ name: 'bare', transport: 'stdio', command: 'mcp-bare', args: [], env: {}, confirm: false });
    });

    it('reads a Streamable HTTP server with its headers', () => {
      const [s] = servers({
        web: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer t' } },
      }).servers;
      expect(s).toEqual({
        name: 'web',
        transport: 'http',
        url: 'https://mcp.example.com/mcp',
        headers: { Authorization: 'Bearer t' },
        confirm: false,
      });
    });

    it('accepts an http:// url and gives a server without headers an empty map', () => {
      const [s] = servers({ local: { url: 'http://127.0.0.1:3001/mcp' } }).servers;
      expect(s).toMatchObject({ transport: 'http', url: 'http://127.0.0.1:3001/mcp', headers: {} });
    });

    it.each([
      ['stdio', { command: 'x' }, 'stdio'],
      ['http', { url: 'https://h/mcp' }, 'http'],
      ['streamable-http', { url: 'https://h/mcp' }, 'http'],
      ['streamableHttp', { url: 'https://h/mcp' }, 'http'],
    ])('accepts "type": %s with the matching transport', (type, entry, transport) => {
      expect(servers({ s: { type, ...entry } }).servers[0]?.transport).toBe(transport);
    });

    it('takes "confirm": true, false and a list of tool names as given', () => {
      const list = servers({
        all: { command: 'a', confirm: true },
        none: { command: 'b', confirm: false },
        some: { command: 'c', confirm: ['write_file', 'move_file'] },
        empty: { command: 'd', confirm: [] },
      }).servers;
      expect(list.map((s) => [s.name, s.confirm])).toEqual([
        ['all', true],
        ['none', false],
        ['some', ['write_file', 'move_file']],
        ['empty', []],
      ]);
    });

    it('keeps a positive integer timeoutMs and leaves it out when absent', () => {
      const [timed, untimed] = servers({
        timed: { command: 'a', timeoutMs: 120_000 },
        untimed: { command: 'b' },
      }).servers;
      expect(timed?.timeoutMs).toBe(120_000);
      expect(untimed).not.toHaveProperty('timeoutMs');
      expect(servers({ max: { command: 'a', timeoutMs: 2_147_483_647 } }).servers[0]?.timeoutMs).toBe(2_147_483_647);
    });

    it('leaves out a server with "disabled": true, and keeps one with "disabled": false', () => {
      const list = servers({
        off: { command: 'a', disabled: true },
        on: { command: 'b', disabled: false },
      }).servers;
      expect(list.map((s) => s.name)).toEqual(['on']);
    });

    it('does not check the rest of a disabled server', () => {
      expect(servers({ off: { disabled: true } }).servers).toEqual([]);
    });

    it('accepts an empty mcpServers object as no servers', () => {
      expect(servers({})).toEqual({ servers: [], warnings: [] });
    });

    it('accepts server names of letters, digits, _ and -, up to 32 characters', () => {
      const name = 'Abc_09-xyz'.padEnd(32, 'z');
      expect(servers({ [name]: { command: 'a' }, a: { command: 'b' } }).servers.map((s) => s.name)).toEqual([
        name,
        'a',
      ]);
    });

    it('warns of each unknown key, naming the file, the server and the key, and still reads the server', () => {
      const { servers: list, warnings } = servers({
        fs: { command: 'a', autoApprove: ['x'], description: 'files' },
        off: { command: 'b', disabled: true, alwaysAllow: [] },
      });
      expect(list.map((s) => s.name)).toEqual(['fs']);
      expect(warnings).toEqual([
        `TD_MCP_CONFIG ${FILE}: server "fs": ignored unknown key "autoApprove"`,
        `TD_MCP_CONFIG ${FILE}: server "fs": ignored unknown key "description"`,
        `TD_MCP_CONFIG ${FILE}: server "off": ignored unknown key "alwaysAllow"`,
      ]);
    });

    it('ignores keys beside mcpServers at the top level', () => {
      expect(parse({ mcpServers: { a: { command: 'a' } }, globalShortcut: 'x' }).servers).toHaveLength(1);
    });
  });

  describe('when the file is not a config', () => {
    it('refuses malformed JSON naming the file, in one line', () => {
      const { message } = refusal(() => parseMcpConfig('{\n  "mcpServers": {\n    "a": x\n  }\n}\n', FILE));
      expect(message).toMatch(new RegExp(`^TD_MCP_CONFIG ${FILE} is not valid JSON`));
      expect(message).not.toContain('\n');
    });

    it.each([
      ['an array', []],
      ['a string', 'mcpServers'],
      ['null', null],
      ['an object without mcpServers', { servers: {} }],
      ['mcpServers as a list', { mcpServers: [] }],
      ['mcpServers as null', { mcpServers: null }],
    ])('refuses %s as having no "mcpServers" object', (_what, doc) => {
      const { message } = refusal(() => parse(doc));
      expect(message).toContain(`TD_MCP_CONFIG ${FILE}`);
      expect(message).toMatch(/"mcpServers" object/);
    });
  });

  describe('when a server name is bad', () => {
    it.each([
      ['with a space', 'my server'],
      ['of 33 characters', 'a'.repeat(33)],
      ['empty', ''],
      ['with a dot', 'fs.local'],
      ['with a slash', 'a/b'],
    ])('refuses a name %s, naming it and the rule', (_what, name) => {
      expectRefused({ [name]: { command: 'a' } }, /must match \^\[A-Za-z0-9_-\]\{1,32\}\$/, name);
    });

    it('refuses a bad name even when the server is disabled', () => {
      expectRefused({ 'my server': { command: 'a', disabled: true } }, /must match/, 'my server');
    });
  });

  describe('when a server entry is bad', () => {
    it.each([
      ['a string', 'npx server'],
      ['a list', ['npx']],
      ['null', null],
    ])('refuses an entry that is %s', (_what, entry) => {
      expectRefused({ s: entry }, /must be an object/, 's');
    });

    it('refuses a server with neither command nor url', () => {
      expectRefused({ s: { args: ['x'] } }, /exactly one of "command".*or "url".*it has neither/, 's');
    });

    it('refuses a server with both command and url', () => {
      expectRefused({ s: { command: 'a', url: 'https://h/mcp' } }, /exactly one of .*it has both/, 's');
    });

    it.each([
      ['a number', 42],
      ['empty', ''],
      ['blank', '   '],
      ['a list', ['npx', '-y']],
      ['null', null],
    ])('refuses a command that is %s', (_what, command) => {
      expectRefused({ s: { command } }, /"command" must be a non-empty string/, 's');
    });

    it.each([
      ['a string', '-y x'],
      ['a list with a number', ['-y', 3]],
    ])('refuses args that are %s', (_what, args) => {
      expectRefused({ s: { command: 'a', args } }, /"args" must be a list of strings/, 's');
    });

    it.each([
      ['a list', ['A=1']],
      ['an object with a number', { PORT: 3000 }],
      ['a string', 'A=1'],
    ])('refuses env that is %s', (_what, env) => {
      expectRefused({ s: { command: 'a', env } }, /"env" must be an object of string values/, 's');
    });

    it.each([
      ['a number', 1],
      ['empty', ''],
    ])('refuses a cwd that is %s', (_what, cwd) => {
      expectRefused({ s: { command: 'a', cwd } }, /"cwd" must be a non-empty string/, 's');
    });

    it.each([
      ['not a URL', 'not a url'],
      ['a number', 8080],
    ])('refuses a url that is %s', (_what, url) => {
      expectRefused({ s: { url } }, /"url" .* is not a URL/, 's');
    });

    it.each(['ftp://files.example.com/mcp', 'file:///tmp/mcp.sock', 'ws://h/mcp'])('refuses the url %s', (url) => {
      expectRefused({ s: { url } }, /"url" must be http:\/\/ or https:\/\//, 's');
    });

    it('refuses headers that are not an object of strings', () => {
      expectRefused({ s: { url: 'https://h/mcp', headers: { 'X-N': 1 } } }, /"headers" must be an object/, 's');
      expectRefused({ s: { url: 'https://h/mcp', headers: ['a: b'] } }, /"headers" must be an object/, 's');
    });

    it.each(['args', 'env', 'cwd'])('refuses the stdio key %s on an http server', (key) => {
      const value = key === 'args' ? [] : key === 'env' ? {} : '/srv';
      expectRefused(
        { s: { url: 'https://h/mcp', [key]: value } },
        new RegExp(`"${key}" belongs to a stdio server, not a Streamable HTTP one`),
        's',
      );
    });

    it('refuses the http key headers on a stdio server', () => {
      expectRefused(
        { s: { command: 'a', headers: {} } },
        /"headers" belongs to a Streamable HTTP server, not a stdio one/,
        's',
      );
    });

    it.each(['sse', 'websocket', 'STDIO', 3])('refuses "type": %s as not one this client speaks', (type) => {
      expectRefused({ s: { type, command: 'a' } }, /"type" .* is not one this client speaks/, 's');
    });

    it('refuses a stdio type with a url, and an http type with a command', () => {
      expectRefused({ s: { type: 'stdio', url: 'https://h/mcp' } }, /"type" stdio needs a "command", not a "url"/, 's');
      expectRefused({ s: { type: 'http', command: 'a' } }, /"type" http needs a "url", not a "command"/, 's');
    });

    it.each([
      ['a string', 'yes'],
      ['a number', 1],
      ['a list with a number', ['echo', 2]],
      ['an object', { echo: true }],
      ['null', null],
    ])('refuses a confirm that is %s', (_what, confirm) => {
      expectRefused({ s: { command: 'a', confirm } }, /"confirm" must be true, false or a list/, 's');
    });

    it.each([
      ['zero', 0],
      ['negative', -5],
      ['fractional', 1.5],
      ['a string', '1000'],
      ['past the timer limit', 2_147_483_648],
      ['null', null],
    ])('refuses a timeoutMs that is %s', (_what, timeoutMs) => {
      expectRefused({ s: { command: 'a', timeoutMs } }, /"timeoutMs" must be a positive integer of milliseconds/, 's');
    });

    it('checks an http server the same way (confirm and timeoutMs)', () => {
      expectRefused({ s: { url: 'https://h/mcp', confirm: 'all' } }, /"confirm"/, 's');
      expectRefused({ s: { url: 'https://h/mcp', timeoutMs: 0 } }, /"timeoutMs"/, 's');
    });

    it('names the server at fault among good ones', () => {
      expectRefused({ good: { command: 'a' }, bad: { command: 'b', args: 'x' } }, /"args"/, 'bad');
    });
  });
});

describe('"sandbox" of a stdio server (API.md v1.3)', () => {
  const parse = (sandbox: unknown) =>
    parseMcpConfig(JSON.stringify({ mcpServers: { s: { command: 'node', sandbox } } }), 'f.json').servers[0];

  it('takes true (no network, nothing more read) or {net, read}', () => {
    expect(parse(true)).toMatchObject({ sandbox: { net: { mode: 'none' }, read: [] } });
    expect(parse(false)).not.toHaveProperty('sandbox');
    expect(parse({ net: ['registry.npmjs.org'], read: ['/opt/sdk'] })).toMatchObject({
      sandbox: { net: { mode: 'allow', patterns: ['registry.npmjs.org'] }, read: ['/opt/sdk'] },
    });
  });

  it('refuses other shapes, unknown keys, bad patterns and relative paths', () => {
    expect(() => parse('yes')).toThrow(/"sandbox" must be true, false or/);
    expect(() => parse({ write: [] })).toThrow(/takes "net" and "read", not "write"/);
    expect(() => parse({ net: ['http://x'] })).toThrow(/sandbox"\.net must be none, host, or a comma list/);
    expect(() => parse({ read: ['rel'] })).toThrow(/absolute host paths/);
  });

  it('is for stdio servers only', () => {
    const text = JSON.stringify({ mcpServers: { h: { url: 'http://127.0.0.1:1/mcp', sandbox: true } } });
    expect(() => parseMcpConfig(text, 'f.json')).toThrow(/"sandbox" belongs to a stdio server/);
  });
});

describe('loadMcpConfig', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'td-mcp-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the file it is given', () => {
    const file = path.join(dir, 'good.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { fs: { command: 'npx', args: ['x'] } } }));
    expect(loadMcpConfig(file).servers.map((s) => s.name)).toEqual(['fs']);
  });

  it('refuses a file it cannot read, naming it', () => {
    const file = path.join(dir, 'missing.json');
    const { message } = refusal(() => loadMcpConfig(file));
    expect(message).toMatch(new RegExp(`^TD_MCP_CONFIG ${file}: cannot read it`));
    expect(message).toMatch(/ENOENT/);
  });

  it('names the file in a refusal of what it holds', () => {
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, '{"mcpServers": {"a b": {"command": "x"}}}');
    const { message } = refusal(() => loadMcpConfig(file));
    expect(message).toContain(`TD_MCP_CONFIG ${file}: server "a b"`);
  });

  it('refuses a directory as a file it cannot read', () => {
    expect(refusal(() => loadMcpConfig(dir)).message).toMatch(/cannot read it/);
  });
});
