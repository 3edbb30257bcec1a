import type { Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../../test/support/redis.js';
import { coalesceWrites } from './redis-writes.js';

let server: TestRedis;
beforeAll(async () => {
  server = await startRedis();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

/** Counts the socket's flushes: `_write` for one chunk, `_writev` for several at once. */
function countFlushes(redis: Redis): { single: number; batched: number } {
  const stream = (
    redis as unknown as {
      stream: Socket & { _write: (...args: unknown[]) => unknown; _writev: (...args: unknown[]) => unknown };
    }
  ).stream;
  const counts = { single: 0, batched: 0 };
  const write = stream._write;
  const writev = stream._writev;
  stream._write = function (this: Socket, ...args: unknown[]) {
    counts.single++;
    return write.apply(this, args);
  };
  stream._writev = function (this: Socket, ...args: unknown[]) {
    counts.batched++;
    return writev.apply(this, args);
  };
  return counts;
}

describe('coalesceWrites', () => {
  it('sends the commands of one burst in one socket write, with their replies in order', async () => {
    const redis = new Redis(server.url);
    coalesceWrites(redis);
    await redis.ping();
    const flushes = countFlushes(redis);
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => redis.echo(`m${i}`)));
    expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
    expect(flushes).toEqual({ single: 0, batched: 1 });
    redis.disconnect();
  });

  it('writes one command per call without it (what it saves)', async () => {
    const redis = new Redis(server.url);
    await redis.ping();
    const flushes = countFlushes(redis);
    await Promise.all(Array.from({ length: 20 }, (_, i) => redis.echo(`m${i}`)));
    expect(flushes.single + flushes.batched).toBeGreaterThan(1);
    redis.disconnect();
  });

  it('keeps coalescing on the new socket after a reconnect', async () => {
    const redis = new Redis(server.url);
    coalesceWrites(redis);
    await redis.ping();
    const ready = new Promise((resolve) => redis.once('ready', resolve));
    (redis as unknown as { stream: Socket }).stream.destroy();
    await ready;
    const flushes = countFlushes(redis);
    expect(await Promise.all([redis.echo('a'), redis.echo('b'), redis.echo('c')])).toEqual(['a', 'b', 'c']);
    expect(flushes).toEqual({ single: 0, batched: 1 });
    redis.disconnect();
  });
});
