import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { randomPrefix } from '../../../../test/support/redis.js';
import { useRedis } from '../../../../test/support/use-redis.js';
import { describeInboxFeedContract } from './inbox-feed.contract.js';
import { parseChange, RedisInboxFeed } from './redis.js';

let url = '';
let redis: Redis;
useRedis((server, r) => {
  url = server.url;
  redis = r;
});

/** A feed on its own connection, as on a separate coordinator. */
function feedOn(prefix: string): { feed: RedisInboxFeed; close(): Promise<void> } {
  const connection = new Redis(url);
  const feed = new RedisInboxFeed({ redis: connection, prefix });
  return {
    feed,
    close: async () => {
      await feed.close();
      connection.disconnect();
    },
  };
}

describeInboxFeedContract('RedisInboxFeed', async () => {
  const prefix = randomPrefix();
  const a = feedOn(prefix);
  const b = feedOn(prefix);
  return {
    feed: a.feed,
    peer: b.feed,
    cleanup: async () => {
      await Promise.all([a.close(), b.close()]);
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
    },
  };
});

describe('RedisInboxFeed on Redis', () => {
  it('keeps its index under its own hash tag, so it works on a cluster', async () => {
    const prefix = randomPrefix();
    const { feed, close } = feedOn(prefix);
    const now = Date.now();
    const item = {
      id: 'cf_1',
      type: 'confirmation' as const,
      session: 's1',
      round: 'rnd_1',
      run: 'r1',
      callId: 'c1',
      name: 'run_command',
      args: {},
      createdAt: now,
      order: 0,
      deadline: now + 60_000,
    };
    await feed.announce({ kind: 'asked', session: 's1', item });
    expect(await redis.keys(`${prefix}:*`)).toEqual([`${prefix}:{inbox}:sessions`]);
    await close();
    await redis.del(`${prefix}:{inbox}:sessions`);
  });

  it('ignores a message that is not a change', () => {
    expect(parseChange('nope')).toBeUndefined();
    expect(parseChange('{"kind":"gone","session":"s"}')).toBeUndefined();
    expect(parseChange('{"kind":"asked","session":"s","item":null}')).toBeUndefined();
    expect(parseChange('{"kind":"gone","session":"s","id":"x"}')).toEqual({ kind: 'gone', session: 's', id: 'x' });
  });
});
