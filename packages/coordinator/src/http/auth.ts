import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/**
 * A check of a candidate against the configured token. Both sides are hashed first so
 * timingSafeEqual compares equal-length buffers and the token's length does not leak.
 */
export function createTokenCheck(token: string): (candidate: unknown) => boolean {
  const expected = digest(token);
  return function isToken(candidate) {
    return typeof candidate === 'string' && candidate !== '' && timingSafeEqual(digest(candidate), expected);
  };
}

/** A check of `Authorization: Bearer <token>` against the configured token. */
export function createBearerCheck(token: string): (authorization: unknown) => boolean {
  const isToken = createTokenCheck(token);
  return function isAuthorized(authorization) {
    if (typeof authorization !== 'string') return false;
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    return isToken(match?.[1]);
  };
}
