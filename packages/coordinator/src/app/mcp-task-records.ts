import { tryParseJson } from '@tool-dispatch/shared/redis';
import type { McpTaskPage, McpTaskRecord, McpTaskRecords } from '../http/mcp/mcp-tasks-records.js';
import type { RedisClient } from '../support/redis-client.js';

/** Most tasks one embedded process keeps (the oldest go first past it). */
export const MAX_MEMORY_MCP_TASKS = 100_000;

const pageOf = (records: McpTaskRecord[], cursor: string | undefined, limit: number): McpTaskPage => {
  const from = cursor !== undefined && /^\d+$/.test(cursor) ? Number(cursor) : 0;
  const page = records.slice(from, from + limit);
  return from + limit < records.length ? { records: page, nextCursor: String(from + limit) } : { records: page };
};

/** McpTaskRecords of one process (embedded, `tool-dispatch mcp`): a map with expiries. */
export class MemoryMcpTaskRecords implements McpTaskRecords {
  private readonly tasks = new Map<string, { record: McpTaskRecord; until: number }>();

  async put(record: McpTaskRecord, maxAgeMs: number): Promise<void> {
    this.tasks.set(record.taskId, { record: { ...record }, until: Date.now() + maxAgeMs });
    if (this.tasks.size > MAX_MEMORY_MCP_TASKS) {
      const oldest = this.tasks.keys().next().value;
      if (oldest !== undefined) this.tasks.delete(oldest);
    }
  }

  async get(taskId: string): Promise<McpTaskRecord | null> {
    const hit = this.tasks.get(taskId);
    if (!hit) return null;
    if (hit.until <= Date.now()) {
      this.tasks.delete(taskId);
      return null;
    }
    return { ...hit.record };
  }

  async ended(taskId: string, at: number): Promise<void> {
    const hit = this.tasks.get(taskId);
    if (!hit || hit.record.endedAt !== undefined) return;
    hit.record.endedAt = at;
    hit.until = at + hit.record.ttlMs;
  }

  async list(owner: string, cursor: string | undefined, limit: number): Promise<McpTaskPage> {
    const now = Date.now();
    const mine: McpTaskRecord[] = [];
    for (const [id, hit] of this.tasks)
      if (hit.until <= now) this.tasks.delete(id);
      else if (hit.record.owner === owner) mine.push({ ...hit.record });
    return pageOf(mine, cursor, limit);
  }

  async close(): Promise<void> {}
}

/**
 * McpTaskRecords in Redis: `<prefix>:mcptask:<id>` (the record's JSON, expiring as the record
 * says) and `<prefix>:mcptasks:<owner>` (a sorted set of the owner's task ids by creation, pruned
 * of expired ones as it is listed). One key per command, so a Redis Cluster serves them as well.
 */
export class RedisMcpTaskRecords implements McpTaskRecords {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(taskId: string): string {
    return `${this.prefix}:mcptask:${taskId}`;
  }

  private ownerKey(owner: string): string {
    return `${this.prefix}:mcptasks:${owner}`;
  }

  async put(record: McpTaskRecord, maxAgeMs: number): Promise<void> {
    await this.redis.set(this.key(record.taskId), JSON.stringify(record), 'PX', maxAgeMs);
    const index = this.ownerKey(record.owner);
    await this.redis.zadd(index, String(record.createdAt), record.taskId);
    await this.redis.pexpire(index, maxAgeMs);
  }

  async get(taskId: string): Promise<McpTaskRecord | null> {
    const text = await this.redis.get(this.key(taskId));
    return text === null ? null : ((tryParseJson(text) as McpTaskRecord | undefined) ?? null);
  }

  async ended(taskId: string, at: number): Promise<void> {
    const record = await this.get(taskId);
    if (!record || record.endedAt !== undefined) return;
    const left = at + record.ttlMs - Date.now();
    if (left <= 0) {
      await this.redis.del(this.key(taskId));
      return;
    }
    // XX: a record that expired meanwhile stays gone.
    await this.redis.set(this.key(taskId), JSON.stringify({ ...record, endedAt: at }), 'PX', left, 'XX');
  }

  async list(owner: string, cursor: string | undefined, limit: number): Promise<McpTaskPage> {
    const index = this.ownerKey(owner);
    const ids = await this.redis.zrange(index, '0', '-1');
    const texts = ids.length === 0 ? [] : await Promise.all(ids.map((id) => this.redis.get(this.key(id))));
    const records: McpTaskRecord[] = [];
    const gone: string[] = [];
    texts.forEach((text, i) => {
      const record = text === null ? undefined : (tryParseJson(text) as McpTaskRecord | undefined);
      if (record && record.owner === owner) records.push(record);
      else gone.push(ids[i] as string);
    });
    if (gone.length > 0) await this.redis.zrem(index, ...gone);
    return pageOf(records, cursor, limit);
  }

  async close(): Promise<void> {}
}
