import { describe, expect, it } from 'vitest';
import {
  createDashboardSessions,
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
    expect(sessions.isValid(header(`${v}.${issued}.${mac.slice(0, -1)}A`), now)).toBe(mac.endsWith('A'));
    expect(sessions.isValid(header(value), now + DASHBOARD_SESSION_MS + 1)).toBe(false);
    expect(sessions.isValid(header(sessions.issue(now + 10 * 60_000)), now)).toBe(false);
    for (const bad of [undefined, '', 'td_dashboard=', header('v1.x.y'), ['td_dashboard=v1']]) {
      expect(sessions.isValid(bad, now)).toBe(false);
    }
  });

  it('counts only paths at or under /admin/queues as the dashboard', () => {
    expect(isDashboardPath('/admin/queues')).toBe(true);
    expect(isDashboardPath('/admin/queues/api/queues?x=1')).toBe(true);
    expect(isDashboardPath('/admin/queuesx')).toBe(false);
    expect(isDashboardPath('/v1/tools')).toBe(false);
  });
});
