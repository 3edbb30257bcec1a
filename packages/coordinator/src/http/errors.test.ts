import { describe, expect, it } from 'vitest';
import { isRedisUnreachable, toHttpError } from './errors.js';

describe('Redis out of reach, at the HTTP edge', () => {
  // The messages ioredis gives while a node or a cluster primary is down (seen in
  // test/distributed/cluster-away.test.ts and redis-restart.test.ts).
  it.each([
    'Too many Cluster redirections. Last error: Error: Connection is closed.',
    'Connection is closed.',
    'CLUSTERDOWN The cluster is down',
    'Reached the max retries per request limit (which is 3). Refer to "maxRetriesPerRequest" option for details.',
    "Stream isn't writeable and enableOfflineQueue options is false",
    'connect ECONNREFUSED 127.0.0.1:6379',
  ])('answers 503 store_unavailable for %j, saying to retry under the key', (message) => {
    const { error, internal } = toHttpError(new Error(message));
    expect(error.statusCode).toBe(503);
    expect(error.code).toBe('store_unavailable');
    expect(error.message).toMatch(/same Idempotency-Key/);
    expect(internal).toBe(true);
  });

  it('knows ioredis errors by name too, and leaves every other error a 500', () => {
    const maxRetries = Object.assign(new Error('whatever'), { name: 'MaxRetriesPerRequestError' });
    expect(isRedisUnreachable(maxRetries)).toBe(true);
    expect(isRedisUnreachable('Connection is closed.')).toBe(false);
    const other = toHttpError(new TypeError('cannot read properties of undefined'));
    expect(other.error.statusCode).toBe(500);
    expect(other.error.code).toBe('internal_error');
  });
});
