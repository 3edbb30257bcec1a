// Small helpers of the distributed composition: Redis errors logged once in a row, targets and
// URLs without their passwords, a connection closed whatever its state.
import type { RedisClient, RedisTarget } from '@tool-dispatch/shared/redis';

/** Logs an infrastructure error once per distinct message in a row (reconnect loops repeat them). */
export function onceInARow(log: (line: string) => void, label: string): (e: Error) => void {
  let last = '';
  return (e) => {
    if (e.message === last) return;
    last = e.message;
    log(`${label}: ${e.message}`);
  };
}

/** The target for a log line, passwords left out. */
export function describeTarget(target: RedisTarget): string {
  return 'url' in target
    ? redactUrl(target.url)
    : `the Redis Cluster of ${target.clusterNodes.map(redactUrl).join(', ')}`;
}

/** A Redis URL for a log line: its password replaced by ***. */
export function redactUrl(url: string): string {
  if (!url.includes('://')) return url;
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'REDIS_URL';
  }
}

/** Quits a connection that is ready, drops one that is not. */
export async function quitRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
  else redis.disconnect();
}
