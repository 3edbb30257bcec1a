import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { loadTokenTable, parseTokenFile } from './tokens.js';

const sha = (t: string) => createHash('sha256').update(t).digest('hex');
const entry = (over: Record<string, unknown> = {}) => ({
  name: 'a',
  sha256: sha('token-a'),
  tenant: 'ta',
  role: 'backend',
  ...over,
});
const file = (doc: unknown) => {
  const f = path.join(mkdtempSync(path.join(tmpdir(), 'td-tokens-unit-')), 'tokens.json');
  writeFileSync(f, typeof doc === 'string' ? doc : JSON.stringify(doc));
  return f;
};

describe('parseTokenFile', () => {
  it('reads names, tenants and roles', () => {
    const [e] = parseTokenFile(JSON.stringify({ tokens: [entry()] }));
    expect(e).toMatchObject({ name: 'a', tenant: 'ta', role: 'backend' });
  });

  it.each([
    ['{', /not JSON/],
    ['{"tokens": {}}', /expected \{"tokens"/],
    ['{"tokens": []}', /empty/],
    [JSON.stringify({ tokens: [entry({ role: 'root' })] }), /"role" must be one of/],
    [JSON.stringify({ tokens: [entry({ sha256: 'abc' })] }), /sha256/],
    [JSON.stringify({ tokens: [entry({ tenant: '*' })] }), /only an operator may have tenant "\*"/],
    [JSON.stringify({ tokens: [entry({ role: 'operator' })] }), /operator's "tenant" must be "\*"/],
    [JSON.stringify({ tokens: [entry({ token: 'plain' })] }), /unknown field\(s\) token/],
    [JSON.stringify({ tokens: [entry(), entry({ sha256: sha('b') })] }), /two tokens are named a/],
    [JSON.stringify({ tokens: [entry(), entry({ name: 'b' })] }), /same sha256/],
  ])('refuses %s naming the problem', (text, message) => {
    expect(() => parseTokenFile(text)).toThrow(message);
  });
});

describe('loadTokenTable', () => {
  it('finds who a bearer token is, and nobody for another token or header', () => {
    const table = loadTokenTable(
      file({ tokens: [entry(), entry({ name: 'b', sha256: sha('token-b'), role: 'approver' })] }),
    );
    expect(table.principalOf('Bearer token-b')).toEqual({ name: 'b', tenant: 'ta', role: 'approver' });
    expect(table.principalOf('bearer   token-a ')).toMatchObject({ name: 'a' });
    for (const h of ['Bearer token-c', 'token-a', 'Basic token-a', undefined, 'Bearer '])
      expect(table.principalOf(h)).toBeNull();
  });

  it('is a ConfigError naming TD_API_TOKENS and the file when unusable', () => {
    const f = file('{');
    expect(() => loadTokenTable(f)).toThrow(ConfigError);
    expect(() => loadTokenTable(f)).toThrow(`TD_API_TOKENS: ${f}: not JSON`);
    expect(() => loadTokenTable('/nonexistent/tokens.json')).toThrow(/cannot read/);
  });

  it('reload takes the new file; a bad one keeps the tokens in force', () => {
    const f = file({ tokens: [entry()] });
    const table = loadTokenTable(f);
    writeFileSync(f, JSON.stringify({ tokens: [entry({ name: 'new', sha256: sha('token-new') })] }));
    table.reload();
    expect(table.principalOf('Bearer token-new')).toMatchObject({ name: 'new' });
    expect(table.principalOf('Bearer token-a')).toBeNull();
    writeFileSync(f, 'nope');
    expect(() => table.reload()).toThrow(/not JSON/);
    expect(table.principalOf('Bearer token-new')).toMatchObject({ name: 'new' });
  });
});
