import type { AnnouncedTool } from '@tool-dispatch/shared';
import { type RedisKeys, redisKeys, type WorkerAnnouncement } from '@tool-dispatch/shared/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomPrefix, spawnRedisServer, type TestRedis } from '../../../../../test/support/redis.js';
import { LAPSED_GRACE_MS, WorkerDirectory } from './worker-directory.js';

// A redis-server of this file's own (never the machine's on 6379, nor a shared REDIS_URL).
let server: TestRedis;
let redis: Redis;
beforeAll(async () => {
  server = await spawnRedisServer();
  redis = new Redis(server.url);
}, 30_000);
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

const TTL_MS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const tool = (server: string, name: string, extra: Partial<AnnouncedTool> = {}): AnnouncedTool => ({
  name: `mcp__${server}__${name}`,
  description: `${name} of ${server}`,
  parameters: { type: 'object' },
  server,
  tool: name,
  confirm: false,
  dedupe: false,
  ...extra,
});

/** A deployment on a fresh prefix: workers announce into it, directories read it (re-reading on every call). */
function deployment() {
  const keys: RedisKeys = redisKeys(randomPrefix());
  const announce = async (
    id: string,
    fields: { at: number; tools?: AnnouncedTool[]; handlers?: string[]; aliveForMs?: number; keyTtlMs?: number },
  ) => {
    const announcement: WorkerAnnouncement = {
      id,
      handlers: fields.handlers ?? ['read_files'],
      concurrency: 16,
      pid: 1,
      host: 'test',
      startedAt: 0,
      at: fields.at,
      ...(fields.tools ? { tools: fields.tools } : {}),
    };
    await redis
      .multi()
      .set(keys.worker(id), JSON.stringify(announcement), 'PX', fields.keyTtlMs ?? TTL_MS)
      .zadd(keys.workersAlive(), Date.now() + (fields.aliveForMs ?? TTL_MS), id)
      .exec();
  };
  const directory = () => new WorkerDirectory(redis, keys, 0);
  return { announce, directory, keys };
}

/** Reads again after the clock moved (a 0 ms cache still answers twice within one millisecond). */
async function readAgain(directory: WorkerDirectory): Promise<readonly AnnouncedTool[]> {
  await sleep(3);
  return directory.announcedTools();
}

describe('WorkerDirectory.announcedTools', () => {
  it('is empty with no workers', async () => {
    const { directory } = deployment();
    expect(await directory().announcedTools()).toEqual([]);
  });

  it('is empty for workers that announce no tools (before v1.1)', async () => {
    const { announce, directory } = deployment();
    await announce('w1', { at: 1 });
    expect(await directory().announcedTools()).toEqual([]);
  });

  it('merges the tools of all live workers, sorted by name', async () => {
    const { announce, directory } = deployment();
    await announce('w1', { at: 1, tools: [tool('fs', 'read'), tool('everything', 'echo')] });
    await announce('w2', { at: 2, tools: [tool('web', 'fetch'), tool('fs', 'read')] });
    expect((await directory().announcedTools()).map((t) => t.name)).toEqual([
      'mcp__everything__echo',
      'mcp__fs__read',
      'mcp__web__fetch',
    ]);
  });

  it('leaves out the tools of a worker no longer alive, though its announcement is still there', async () => {
    const { announce, directory } = deployment();
    await announce('w1', { at: 1, tools: [tool('a', 'kept')] });
    await announce('w2', { at: 2, tools: [tool('b', 'gone')], aliveForMs: -1 });
    expect((await directory().announcedTools()).map((t) => t.name)).toEqual(['mcp__a__kept']);
  });

  it('leaves out a worker whose announcement expired before its place among the living', async () => {
    const { announce, directory } = deployment();
    await announce('w1', { at: 1, tools: [tool('a', 'kept')] });
    await announce('w2', { at: 2, tools: [tool('b', 'gone')], keyTtlMs: 1 });
    await sleep(5);
    expect((await directory().announcedTools()).map((t) => t.name)).toEqual(['mcp__a__kept']);
  });

  it('still counts, for LAPSED_GRACE_MS, a worker it saw live whose announcement lapsed without it leaving (its Redis node was away)', async () => {
    const { announce, directory } = deployment();
    const keys = directory();
    await announce('w1', { at: 1, tools: [tool('a', 'kept')] });
    expect((await keys.announcedTools()).map((t) => t.name)).toEqual(['mcp__a__kept']);
    // The node came back with the announcement expired and the worker's place lapsed 5 s ago.
    await announce('w1', { at: 1, tools: [tool('a', 'kept')], aliveForMs: -5_000, keyTtlMs: 1 });
    await sleep(5);
    expect((await readAgain(keys)).map((t) => t.name)).toEqual(['mcp__a__kept']);
    // A directory that never saw it live does not count it.
    expect(await directory().announcedTools()).toEqual([]);
    // Lapsed longer than the grace: gone.
    await announce('w1', { at: 1, aliveForMs: -(LAPSED_GRACE_MS + 1_000), keyTtlMs: 1 });
    await sleep(5);
    expect(await readAgain(keys)).toEqual([]);
  });

  it('forgets at once a worker that left (its place removed)', async () => {
    const { announce, directory, keys } = deployment();
    const dir = directory();
    await announce('w1', { at: 1, tools: [tool('a', 'kept')] });
    expect(await dir.announcedTools()).toHaveLength(1);
    await redis.multi().zrem(keys.workersAlive(), 'w1').del(keys.worker('w1')).exec();
    expect(await readAgain(dir)).toEqual([]);
  });

  describe('when two workers announce one name differently', () => {
    it('takes the most recent announcement of it', async () => {
      const { announce, directory } = deployment();
      await announce('w-new', { at: 2_000, tools: [tool('s', 'x', { description: 'newer', confirm: true })] });
      await announce('w-old', { at: 1_000, tools: [tool('s', 'x', { description: 'older' })] });
      const [x] = await directory().announcedTools();
      expect(x).toMatchObject({ description: 'newer', confirm: true });
    });

    it('takes the other once that worker announces again, later', async () => {
      const { announce, directory } = deployment();
      const dir = directory();
      await announce('w1', { at: 1_000, tools: [tool('s', 'x', { description: 'from w1' })] });
      await announce('w2', { at: 2_000, tools: [tool('s', 'x', { description: 'from w2' })] });
      expect((await dir.announcedTools())[0]?.description).toBe('from w2');
      await announce('w1', { at: 3_000, tools: [tool('s', 'x', { description: 'from w1' })] });
      expect((await readAgain(dir))[0]?.description).toBe('from w1');
    });
  });

  it('answers the array itself, not a promise, while its cache holds a read (a round waits no turn for it)', async () => {
    const { announce, keys } = deployment();
    await announce('w1', { at: 1_000, tools: [tool('a', 'one')] });
    const dir = new WorkerDirectory(redis, keys, 60_000);
    const first = dir.announcedTools();
    expect(first).toBeInstanceOf(Promise);
    const read = await first;
    const cached = dir.announcedTools();
    expect(cached).not.toBeInstanceOf(Promise);
    expect(cached).toBe(read);
  });

  describe('when the announcements say the same', () => {
    it('hands out the same array (the catalog compares by identity)', async () => {
      const { announce, directory } = deployment();
      const dir = directory();
      await announce('w1', { at: 1_000, tools: [tool('a', 'one'), tool('a', 'two')] });
      const first = await dir.announcedTools();
      expect(await readAgain(dir)).toBe(first);
    });

    it('hands out the same array across heartbeats that change nothing but the time', async () => {
      const { announce, directory } = deployment();
      const dir = directory();
      await announce('w1', { at: 1_000, tools: [tool('a', 'one')] });
      const first = await dir.announcedTools();
      await announce('w1', { at: 2_000, tools: [tool('a', 'one')] });
      await announce('w2', { at: 2_500, tools: [tool('a', 'one')] });
      expect(await readAgain(dir)).toBe(first);
    });
  });

  describe('when the announcements change', () => {
    it('hands out a new array with the change', async () => {
      const { announce, directory } = deployment();
      const dir = directory();
      await announce('w1', { at: 1_000, tools: [tool('a', 'one')] });
      const first = await dir.announcedTools();
      await announce('w1', { at: 2_000, tools: [tool('a', 'one'), tool('a', 'two')] });
      const second = await readAgain(dir);
      expect(second).not.toBe(first);
      expect(second.map((t) => t.name)).toEqual(['mcp__a__one', 'mcp__a__two']);
      expect(first.map((t) => t.name)).toEqual(['mcp__a__one']);
    });

    it('hands out a new array when a tool left', async () => {
      const { announce, directory } = deployment();
      const dir = directory();
      await announce('w1', { at: 1_000, tools: [tool('a', 'one'), tool('a', 'two')] });
      const first = await dir.announcedTools();
      await announce('w1', { at: 2_000, tools: [tool('a', 'two')] });
      const second = await readAgain(dir);
      expect(second).not.toBe(first);
      expect(second.map((t) => t.name)).toEqual(['mcp__a__two']);
    });
  });
});

describe('WorkerDirectory.handlerNames', () => {
  it('is the union of the live workers handlers, from the same read', async () => {
    const { announce, directory } = deployment();
    await announce('w1', { at: 1, handlers: ['read_files', 'run_command'] });
    await announce('w2', { at: 2, handlers: ['read_files', 'api_weather'], tools: [tool('a', 'one')] });
    const dir = directory();
    expect([...(await dir.handlerNames())].sort()).toEqual(['api_weather', 'read_files', 'run_command']);
    expect((await dir.announcedTools()).map((t) => t.name)).toEqual(['mcp__a__one']);
  });
});
