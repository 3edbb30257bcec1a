import { describe, expect, it } from 'vitest';
import {
  canonicalBase64url,
  createDashboardSessions,
  createSignedSessions,
  DASHBOARD_COOKIE,
  DASHBOARD_SESSION_MS,
  isDashboardPath,
} from './dashboard-session.js';

describe('dashboard sessions', () => {
  const sessions = createDashboardSessions('s3cret-token');
  const now = 1_800_000_000_000;
  const header = (value: string) => `other=1; ${DASHBOARD_COOKIE}=${value}`;

  it('accepts a cookie it issued, which does not carry the token', () => {
    const value = sessions.issue(now);
    expect(value).not.toContain('s3cret-token');
    expect(sessions.isValid(header(value), now + 1000)).toBe(true);
  });

  it('refuses a cookie issued under another token, tampered with, or past its lifetime', () => {
    const value = sessions.issue(now);
    expect(createDashboardSessions('another-token').isValid(header(value), now)).toBe(false);
    const [v, issued, mac] = value.split('.') as [string, string, string];
    expect(sessions.isValid(header(`${v}.${Number(issued) + 1}.${mac}`), now)).toBe(false);
    for (const at of [0, 15, 31])
      expect(sessions.isValid(header(`${v}.${issued}.${flipByte(mac, at)}`), now)).toBe(false);
    expect(sessions.isValid(header(value), now + DASHBOARD_SESSION_MS + 1)).toBe(false);
    expect(sessions.isValid(header(sessions.issue(now + 10 * 60_000)), now)).toBe(false);
    for (const bad of [undefined, '', 'td_dashboard=', header('v1.x.y'), ['td_dashboard=v1']]) {
      expect(sessions.isValid(bad, now)).toBe(false);
    }
  });

  it('refuses a cookie whose MAC, issue time or name has one byte changed', () => {
    // One key for every name: only the MAC tells alice's cookie from one made out for another name.
    const signed = createSignedSessions({ cookie: 'c', purpose: 'p', keyOf: () => 'k' });
    const value = signed.issue('alice', now);
    const [v, issued, name, mac] = value.split('.') as [string, string, string, string];
    const asked = (text: string) => signed.nameOf(`c=${text}`, now);
    expect(asked(value)).toBe('alice');
    for (const at of [0, 16, 31]) expect(asked(`${v}.${issued}.${name}.${flipByte(mac, at)}`)).toBeUndefined();
    expect(asked(`${v}.${Number(issued) - 1}.${name}.${mac}`)).toBeUndefined();
    for (const at of [0, 4]) expect(asked(`${v}.${issued}.${flipByte(name, at)}.${mac}`)).toBeUndefined();
  });

  it('refuses another spelling of the same bytes: a MAC or name with an unused bit of its last character set', () => {
    const signed = createSignedSessions({ cookie: 'c', purpose: 'p', keyOf: () => 'k' });
    const value = signed.issue('alice', now); // 5 bytes: 7 characters, the last with 2 unused bits
    const [v, issued, name, mac] = value.split('.') as [string, string, string, string];
    const asked = (text: string) => signed.nameOf(`c=${text}`, now);
    // The premise: each spelling decodes to the very bytes issued.
    expect(Buffer.from(paddingBitSet(mac), 'base64url').equals(Buffer.from(mac, 'base64url'))).toBe(true);
    expect(Buffer.from(paddingBitSet(name), 'base64url').toString()).toBe('alice');
    expect(asked(`${v}.${issued}.${name}.${paddingBitSet(mac)}`)).toBeUndefined();
    expect(asked(`${v}.${issued}.${paddingBitSet(name)}.${mac}`)).toBeUndefined();
    const unnamed = sessions.issue(now);
    const [uv, ui, umac] = unnamed.split('.') as [string, string, string];
    expect(sessions.isValid(header(`${uv}.${ui}.${paddingBitSet(umac)}`), now)).toBe(false);
    expect(canonicalBase64url(umac)?.length).toBe(32);
    expect(canonicalBase64url(paddingBitSet(umac))).toBeUndefined();
  });

  it('counts only paths at or under /admin/queues as the dashboard', () => {
    expect(isDashboardPath('/admin/queues')).toBe(true);
    expect(isDashboardPath('/admin/queues/api/queues?x=1')).toBe(true);
    expect(isDashboardPath('/admin/queuesx')).toBe(false);
    expect(isDashboardPath('/v1/tools')).toBe(false);
  });
});

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** `encoded` (base64url) with byte `at` of what it decodes to changed. */
function flipByte(encoded: string, at: number): string {
  const bytes = Buffer.from(encoded, 'base64url');
  bytes[at] = (bytes[at] as number) ^ 0x01;
  return bytes.toString('base64url');
}

/** `encoded` with the lowest bit of its last character set: a bit decoding ignores (when the length is not a multiple of 4). */
function paddingBitSet(encoded: string): string {
  const last = B64URL.indexOf(encoded.at(-1) as string);
  return `${encoded.slice(0, -1)}${B64URL[last | 1]}`;
}
