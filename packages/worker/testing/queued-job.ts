import type { ExecJob } from '@tool-dispatch/shared';
import type { QueuedJob, RedisKeys } from '@tool-dispatch/shared/redis';

/**
 * A queued job of coordinator `c-1` (its results stream under `keys`): one call of `name` per
 * entry of `args`, call i at index i of a fresh round, on the concurrent queue. For tests only. @internal
 */
export function queuedJobOf(keys: RedisKeys, name: string, args: readonly Record<string, unknown>[]): QueuedJob {
  const round = `rnd_${Math.random().toString(36).slice(2)}`;
  const calls: ExecJob[] = args.map((a, i) => ({
    session: 's1',
    tenant: 't1',
    run: 'r1',
    round,
    toolCallId: `call_${i}`,
    callIndex: i,
    name,
    args: a,
    queue: 'concurrent',
    timeoutMs: 10_000,
    workspace: '/tmp',
  }));
  return { calls, replyTo: keys.results('c-1'), coordinator: 'c-1' };
}
