import type { RedisKeys } from './keys.js';
import { type DeploymentRecord, tryParseJson } from './queues.js';
import type { RedisClient } from './redis-connect.js';

/**
 * Compares this process's TD_QUEUE_SHARDS with the deployment's record in Redis and says what
 * differs (undefined when they agree). A coordinator (`writer`) then records its own value, so the
 * record follows the coordinators, which decide where jobs go; a worker only compares. A mismatch
 * means jobs wait on shards nobody consumes, or workers wait on shards nobody fills.
 */
export async function checkDeployment(
  redis: RedisClient,
  keys: RedisKeys,
  mine: { queueShards: number; id: string; writer: boolean },
): Promise<string | undefined> {
  const recorded = parseDeploymentRecord(tryParseJson(await redis.get(keys.deployment())));
  if (mine.writer) {
    const record: DeploymentRecord = { queueShards: mine.queueShards, by: mine.id, at: Date.now() };
    await redis.set(keys.deployment(), JSON.stringify(record));
  }
  if (!recorded || recorded.queueShards === mine.queueShards) return undefined;
  return (
    `TD_QUEUE_SHARDS MISMATCH: this process (${mine.id}) uses ${mine.queueShards} shard(s), but ${recorded.by} ` +
    `recorded ${recorded.queueShards} at ${new Date(recorded.at).toISOString()}; every coordinator and worker of ` +
    `prefix ${keys.prefix} must use the same number, or calls wait on shards that nobody consumes`
  );
}

function parseDeploymentRecord(value: unknown): DeploymentRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (!Number.isInteger(v.queueShards) || typeof v.by !== 'string' || typeof v.at !== 'number') return undefined;
  return { queueShards: v.queueShards as number, by: v.by, at: v.at };
}
