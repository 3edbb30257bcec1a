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
    // v1.2 refusals: before a round began they are 503 unavailable, never 500.
    'NOREPLICAS Not enough good replicas to write.',
    "READONLY You can't write against a read only replica.",
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'LOADING Redis is loading the dataset in memory',
    'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no.',
    'Command timed out',
    "Error running script (call to f_1): @user_script:3: READONLY You can't write against a read only replica.",
  ])('answers 503 unavailable for %j, saying to retry under the key', (message) => {
    const { error, internal } = toHttpError(new Error(message));
    expect(error.statusCode).toBe(503);
    expect(error.code).toBe('unavailable');
    expect(error.message).toMatch(/same Idempotency-Key/);
    expect(internal).toBe(true);
  });

  it('knows ioredis errors by name too, and leaves every other error a 500', () => {
    const maxRetries = Object.assign(new Error('whatever'), { name: 'MaxRetriesPerRequestError' });
    expect(isRedisUnreachable(maxRetries)).toBe(true);
    expect(isRedisUnreachable('Connection is closed.')).toBe(false);
    const unacked = Object.assign(new Error('a round was acknowledged by 0 of 1 replicas'), {
      name: 'NotDurableError',
    });
    expect(toHttpError(unacked).error.code).toBe('unavailable');
    expect(isRedisUnreachable(new Error('the tool said: loading the page'))).toBe(false);
    const other = toHttpError(new TypeError('cannot read properties of undefined'));
    expect(other.error.statusCode).toBe(500);
    expect(other.error.code).toBe('internal_error');
  });
});

describe('the edge and @tool-dispatch/shared/redis agree on what a refusal is', () => {
  it('uses the same list of refusals as isRedisRefusal', async () => {
    const shared = await import('@tool-dispatch/shared/redis');
    for (const message of [
      'NOREPLICAS x',
      'Command timed out',
      'READONLY y',
      'MASTERDOWN z',
      'ECONNRESET',
      'ERR syntax',
    ])
      expect(isRedisUnreachable(new Error(message))).toBe(shared.isRedisRefusal(new Error(message)));
  });
});
