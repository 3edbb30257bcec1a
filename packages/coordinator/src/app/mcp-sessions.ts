import { tryParseJson } from '@tool-dispatch/shared/redis';
import type { McpCancel, McpSessionRecord, McpSessions } from '../http/mcp/mcp-sessions.js';
import { defineScript, duplicateClient, type RedisClient, runScript } from '../support/redis-client.js';

/** How long an MCP session idle (no request) stays known: past it, its client initializes again. */
export const MCP_SESSION_IDLE_MS = 24 * 60 * 60 * 1000;
/** Most MCP sessions one embedded process keeps (the oldest go first past it). */
export const MAX_MEMORY_MCP_SESSIONS = 100_000;

/** How long a session's run counter outlives its last call, unless told (TD_SESSION_TTL_MS's default). */
export const MCP_RUN_KEY_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * A 2026-07-28 session's current run (`mcp-<n>`): one hash per session, `n` and `at` (the last
 * call, Redis's clock so every coordinator measures alike); n moves on once `idle` passed.
 */
export const mcpRunScript = defineScript(
  'mcpRun',
  1,
  `--[[
  KEYS[1] the session's run counter (HASH n, at)
  ARGV[1] idle ms  ARGV[2] the key's TTL ms
  Returns n, the current run's number (1 for a session's first call).
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('HMGET', KEYS[1], 'n', 'at')
local n = tonumber(v[1])
if not n then n = 1 elseif now - tonumber(v[2] or 0) >= tonumber(ARGV[1]) then n = n + 1 end
redis.call('HSET', KEYS[1], 'n', n, 'at', now)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n
`,
);

/** McpSessions of one process (embedded mode, `tool-dispatch mcp`): a map and local listeners. */
export class MemoryMcpSessions implements McpSessions {
  private readonly records = new Map<string, { record: McpSessionRecord; until: number }>();
  private readonly listeners = new Set<(c: McpCancel) => void>();
  /** Per session: its current run's number and the last call's time. */
  private readonly runs = new Map<string, { n: number; at: number }>();

  constructor(private readonly idleMs = MCP_SESSION_IDLE_MS) {}

  async currentRun(session: string, idleMs: number): Promise<number> {
    const now = Date.now();
    const run = this.runs.get(session);
    const n = !run ? 1 : now - run.at >= idleMs ? run.n + 1 : run.n;
    this.runs.delete(session); // re-inserted last: the map's first entries are the longest idle
    this.runs.set(session, { n, at: now });
    if (this.runs.size > MAX_MEMORY_MCP_SESSIONS) {
      const oldest = this.runs.keys().next().value;
      if (oldest !== undefined) this.runs.delete(oldest);
    }
    return n;
  }

  async create(record: McpSessionRecord): Promise<void> {
    this.records.set(record.id, { record, until: Date.now() + this.idleMs });
    if (this.records.size > MAX_MEMORY_MCP_SESSIONS) {
      const oldest = this.records.keys().next().value;
      if (oldest !== undefined) this.records.delete(oldest);
    }
  }

  async get(id: string): Promise<McpSessionRecord | null> {
    const hit = this.records.get(id);
    if (!hit) return null;
    if (hit.until < Date.now()) {
      this.records.delete(id);
      return null;
    }
    hit.until = Date.now() + this.idleMs;
    return hit.record;
  }

  async delete(id: string): Promise<boolean> {
    return this.records.delete(id);
  }

  async cancel(c: McpCancel): Promise<void> {
    for (const l of this.listeners) l(c);
  }

  async onCancel(listener: (c: McpCancel) => void): Promise<() => void> {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}

/**
 * McpSessions in Redis (distributed mode): one key per MCP session (`<prefix>:mcp:<id>`, its idle
 * TTL renewed on each request), so every coordinator serves any request of it; cancels go out on
 * one pub/sub channel every coordinator hears.
 */
export class RedisMcpSessions implements McpSessions {
  private readonly subscriber: RedisClient;
  private readonly channel: string;
  private readonly listeners = new Set<(c: McpCancel) => void>();
  private subscribed: Promise<unknown> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly idleMs = MCP_SESSION_IDLE_MS,
    /** How long a session's run counter outlives its last call (the session's own TTL: it outlives every run's state). */
    private readonly runKeyTtlMs = MCP_RUN_KEY_TTL_MS,
  ) {
    this.channel = `${prefix}:mcp-cancel`;
    this.subscriber = duplicateClient(redis);
    this.subscriber.on('error', () => {}); // reconnects and resubscribes on its own
    this.subscriber.on('message', (channel: string, text: string) => {
      if (channel !== this.channel) return;
      const c = tryParseJson(text) as McpCancel | undefined;
      if (c && typeof c.mcpSession === 'string') for (const l of this.listeners) l(c);
    });
  }

  private key(id: string): string {
    return `${this.prefix}:mcp:${id}`;
  }

  async create(record: McpSessionRecord): Promise<void> {
    await this.redis.set(this.key(record.id), JSON.stringify(record), 'PX', this.idleMs);
  }

  async get(id: string): Promise<McpSessionRecord | null> {
    const key = this.key(id);
    const text = await this.redis.get(key);
    if (text === null) return null;
    this.redis.pexpire(key, this.idleMs).catch(() => undefined);
    return (tryParseJson(text) as McpSessionRecord | undefined) ?? null;
  }

  async delete(id: string): Promise<boolean> {
    return (await this.redis.del(this.key(id))) > 0;
  }

  async currentRun(session: string, idleMs: number): Promise<number> {
    const reply = await runScript(
      this.redis,
      mcpRunScript,
      [`${this.prefix}:mcp-run:${session}`],
      [String(idleMs), String(this.runKeyTtlMs)],
    );
    if (!Number.isInteger(reply) || (reply as number) < 1)
      throw mcpRunScript.unexpectedReply('the run number, a positive integer', reply);
    return reply as number;
  }

  async cancel(c: McpCancel): Promise<void> {
    await this.subscribed;
    await this.redis.publish(this.channel, JSON.stringify(c));
  }

  async onCancel(listener: (c: McpCancel) => void): Promise<() => void> {
    this.listeners.add(listener);
    this.subscribed ??= this.subscriber.subscribe(this.channel);
    await this.subscribed;
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    this.subscriber.disconnect();
  }
}
