import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { startRedis, type TestRedis } from './redis.js';

/**
 * This test file's Redis (`startRedis`) and one connection to it: up before the file's tests
 * (handed to `use`), gone after them.
 */
export function useRedis(use: (server: TestRedis, redis: Redis) => void): void {
  let server: TestRedis | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
    use(server, redis);
  }, 60_000);
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
}
