import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTokenTable } from '../tokens.js';
import { createInboxAuth, INBOX_COOKIE, isInboxPath, singleTokenLookup, tokenTableLookup } from './inbox-auth.js';

const sha = (t: string) => createHash('sha256').update(t).digest('hex');

function tableWith(tokens: { name: string; token: string; tenant: string; role: string }[]) {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'td-inbox-auth-')), 'tokens.json');
  const write = (list: typeof tokens) =>
    writeFileSync(file, JSON.stringify({ tokens: list.map(({ token, ...t }) => ({ ...t, sha256: sha(token) })) }));
  write(tokens);
  return { table: loadTokenTable(file), write };
}

const header = (value: string) => `a=b; ${INBOX_COOKIE}=${value}`;

describe('inbox logins', () => {
  it('gives an approver a cookie that names it, without its token, and reads its tenant and role back', () => {
    const { table } = tableWith([{ name: 'alice', token: 'tok-alice', tenant: 'acme', role: 'approver' }]);
    const auth = createInboxAuth(tokenTableLookup(table));
    const out = auth.logIn('tok-alice');
    if (!('cookie' in out)) throw new Error(out.problem);
    expect(out.cookie).not.toContain('tok-alice');
    expect(auth.principalOf(header(out.cookie))).toEqual({ name: 'alice', tenant: 'acme', role: 'approver' });
  });

  it('refuses an unknown token, and a cookie whose token left the file or whose name was changed', () => {
    const { table, write } = tableWith([
      { name: 'alice', token: 'tok-alice', tenant: 'acme', role: 'approver' },
      { name: 'bob', token: 'tok-bob', tenant: 'other', role: 'approver' },
    ]);
    const auth = createInboxAuth(tokenTableLookup(table));
    expect(auth.logIn('nope')).toEqual({ problem: expect.stringMatching(/not one of/) });
    expect(auth.logIn(undefined)).toEqual({ problem: expect.any(String) });
    const out = auth.logIn('tok-alice');
    if (!('cookie' in out)) throw new Error(out.problem);
    const [v, issued, , mac] = out.cookie.split('.');
    const asBob = `${v}.${issued}.${Buffer.from('bob').toString('base64url')}.${mac}`;
    expect(auth.principalOf(header(asBob))).toBeNull();
    write([{ name: 'bob', token: 'tok-bob', tenant: 'other', role: 'approver' }]);
    table.reload();
    expect(auth.principalOf(header(out.cookie))).toBeNull();
  });

  it('does not take a queue dashboard cookie (unnamed) for an inbox login', () => {
    const auth = createInboxAuth(singleTokenLookup('the-token'));
    const out = auth.logIn('the-token');
    if (!('cookie' in out)) throw new Error(out.problem);
    expect(out.principal).toMatchObject({ role: 'operator', tenant: '*' });
    const [v, issued, , mac] = out.cookie.split('.');
    expect(auth.principalOf(header(`${v}.${issued}.${mac}`))).toBeNull();
    expect(auth.principalOf(header(out.cookie))).toMatchObject({ role: 'operator' });
  });

  it('counts only /inbox and paths under it', () => {
    expect(isInboxPath('/inbox')).toBe(true);
    expect(isInboxPath('/inbox/api/stream?x')).toBe(true);
    expect(isInboxPath('/inboxes')).toBe(false);
  });
});
