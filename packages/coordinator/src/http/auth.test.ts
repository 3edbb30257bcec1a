import { describe, expect, it } from 'vitest';
import { createBearerCheck } from './auth.js';

describe('createBearerCheck', () => {
  const isAuthorized = createBearerCheck('s3cret-token');

  it('accepts the token as a Bearer credential, scheme case-insensitive', () => {
    expect(isAuthorized('Bearer s3cret-token')).toBe(true);
    expect(isAuthorized('bearer s3cret-token')).toBe(true);
  });

  it('refuses a missing header, another scheme, another token, a prefix or a longer token', () => {
    for (const header of [
      undefined,
      '',
      'Basic s3cret-token',
      'Bearer wrong',
      'Bearer s3cret',
      'Bearer s3cret-token2',
    ]) {
      expect(isAuthorized(header)).toBe(false);
    }
    expect(isAuthorized(['Bearer s3cret-token'])).toBe(false);
  });
});
