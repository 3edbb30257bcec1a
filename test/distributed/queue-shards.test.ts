import { shardOf, shardQueueNames } from '@tool-dispatch/shared/redis';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { rt, uid } from '../conformance/api.js';
import { useService } from '../conformance/fixture.js';
import { CLUSTER_QUEUE_SHARDS, startExtraWorker, stopGroup } from '../conformance/service.js';

// DESIGN.md "Beyond one Redis" and API.md TD_QUEUE_SHARDS: each execution queue is split into
// shards, each its own hash slot, a run's jobs all on one shard, every worker consuming every
// shard; processes that disagree on the number are detected and said loudly. Real processes
// (a coordinator and two workers from bin/tool-dispatch) on a real 3-primary Redis Cluster.

const TEST_TIMEOUT_MS = 120_000;
const SHARDS = CLUSTER_QUEUE_SHARDS;

/** The BullMQ queue tags (`{td-…}`) among a node's keys under `prefix`, with the job ids found under each. */
async function queueKeysOn(node: string, prefix: string): Promise<Map<string, string[]>> {
  const [host, port] = node.split(':');
  const redis = new Redis({ host, port: Number(port), lazyConnect: true });
  try {
    await redis.connect();
    const keys = await redis.keys(`${prefix}:{td-*`);
    const byQueue = new Map<string, string[]>();
    for (const key of keys) {
      const m = /^[^:]+:(\{td-[^}]+\}):(.*)$/.exec(key);
      if (!m) continue;
      const [, queue, rest] = m as unknown as [string, string, string];
      const list = byQueue.get(queue) ?? [];
      list.push(rest);
      byQueue.set(queue, list);
    }
    return byQueue;
  } finally {
    redis.disconnect();
  }
}

describe(`TD_QUEUE_SHARDS=${SHARDS} on a 3-primary Redis Cluster`, () => {
  const f = useService('cluster', { workers: 2 });

  it(
    'puts every job of a run on the run’s shard, each shard on a primary of its own, and answers every call',
    async () => {
      const runs = await Promise.all(
        Array.from({ length: 24 }, async (_, i) => {
          const session = await f.api.session(['calculate', 'run_command'], { provider: 'openai', autoApprove: 'all' });
          const run = uid('run');
          const answer = await f.api.round(session, run, [
            rt('calculate', { expression: `${i} + 1` }),
            rt('calculate', { expression: `${i} * 2` }),
            rt('run_command', { command: `echo run-${i}` }),
          ]);
          return { session, run, answer };
        }),
      );
      runs.forEach(({ answer }, i) => {
        expect(answer.results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
        expect(answer.results.map((r) => r.output?.value ?? String(r.output?.stdout).trim())).toEqual([
          i + 1,
          i * 2,
          `run-${i}`,
        ]);
      });

      const prefix = f.service.prefix as string;
      const nodes = (f.service.env.REDIS_CLUSTER_NODES as string).split(',');
      const onNodes = await Promise.all(nodes.map((n) => queueKeysOn(n, prefix)));
      // Each primary holds exactly one shard of each queue: the shards spread over the primaries.
      const concurrent = shardQueueNames('concurrent', SHARDS);
      const serial = shardQueueNames('serial', SHARDS);
      for (const [i, byQueue] of onNodes.entries()) {
        const names = [...byQueue.keys()].sort();
        expect(names, `queues on ${nodes[i]}`).toHaveLength(2);
        expect(names.filter((n) => concurrent.includes(n))).toHaveLength(1);
        expect(names.filter((n) => serial.includes(n))).toHaveLength(1);
      }
      const placed = new Set(onNodes.flatMap((m) => [...m.keys()]));
      expect([...placed].sort()).toEqual([...concurrent, ...serial].sort());

      // Every job (its id names the rounds it carries) sits on the shard of its run.
      const shardOfRound = new Map(runs.map((r) => [r.answer.round, shardOf(r.session, r.run, SHARDS)]));
      let jobs = 0;
      const shardsUsed = new Set<number>();
      for (const byQueue of onNodes) {
        for (const [queue, rests] of byQueue) {
          const shard = Math.max(concurrent.indexOf(queue), serial.indexOf(queue));
          for (const rest of rests) {
            for (const [round, expected] of shardOfRound) {
              if (!rest.includes(round)) continue;
              jobs++;
              shardsUsed.add(shard);
              expect(shard, `job ${rest} in ${queue}`).toBe(expected);
            }
          }
        }
      }
      // 24 runs × (one job for the two calculates, one for the command), as job hashes.
      expect(jobs).toBeGreaterThanOrEqual(48);
      expect(shardsUsed.size).toBe(SHARDS);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'says loudly, in the worker’s log and the coordinator’s, when a worker consumes another number of shards',
    async () => {
      const odd = await startExtraWorker(f.service, { TD_QUEUE_SHARDS: '1' }, 'worker-one-shard');
      try {
        // At its start the worker compares with the coordinators' record in Redis.
        const [line] = await odd.waitLine(/TD_QUEUE_SHARDS MISMATCH.*/, 20_000);
        expect(line).toContain(`uses 1 shard(s)`);
        expect(line).toContain(`recorded ${SHARDS}`);
        // The coordinator sees its announcement when it next reads the workers (each round does).
        const session = await f.api.session(['calculate'], { provider: 'openai' });
        const deadline = Date.now() + 20_000;
        const said = () => f.service.coordinator.lines.find((l) => l.includes('TD_QUEUE_SHARDS MISMATCH: worker'));
        while (!said() && Date.now() < deadline) {
          await f.api.one(session, rt('calculate', { expression: '1' }));
          await new Promise((r) => setTimeout(r, 250));
        }
        expect(said()).toMatch(/consumes 1 shard\(s\) of each queue, this coordinator fills 3/);
      } finally {
        await stopGroup(odd);
      }
    },
    TEST_TIMEOUT_MS,
  );
});
