// ReplicaAcks (the durability points' WAIT) and the command deadline, on a real Redis primary
// with a real replica: no WAIT at all with 0 acks; WAITs grouped per connection; a replica that
// does not acknowledge, or a node demoted to a replica, is a NotDurableError; duplicates for blocking reads have no deadline.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  connectRedis,
  duplicateClient,
  isNotDurable,
  type RedisClient,
  ReplicaAcks,
} from '@tool-dispatch/shared/redis';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/net.js';
import { spawnRedisServer, type TestRedis } from '../support/redis.js';
import { until } from '../support/until.js';

let primary: TestRedis;
let replica: ChildProcess;
let redis: RedisClient;
let replicaDir: string;
let replicaPort: number;

const waitCalls = async (): Promise<number> => {
  const stats = await (redis as Redis).info('commandstats');
  return Number(/cmdstat_wait:calls=(\d+)/.exec(stats)?.[1] ?? 0);
};

beforeAll(async () => {
  primary = await spawnRedisServer();
  const port = Number(new URL(primary.url).port);
  replicaPort = await freePort();
  replicaDir = await mkdtemp(path.join(tmpdir(), 'td-replica-'));
  // biome-ignore format: one flag and its value a line
  replica = spawn('redis-server', [
    '--port', String(replicaPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    '--dir', replicaDir, '--replicaof', '127.0.0.1', String(port),
  ], { stdio: 'ignore' });
  redis = connectRedis({ url: primary.url }, { commandTimeoutMs: 2_000 });
  await until(async () => /connected_slaves:1/.test(await (redis as Redis).info('replication')), {
    timeoutMs: 20_000,
    what: 'replica linked',
  });
  await until(async () => /master_link_status:up/.test(await connectOnce(replicaPort)), {
    timeoutMs: 20_000,
    what: 'replica in sync',
  });
}, 60_000);

async function connectOnce(port: number): Promise<string> {
  const c = connectRedis({ url: `redis://127.0.0.1:${port}` });
  try {
    return await (c as Redis).info('replication');
  } finally {
    c.disconnect();
  }
}

afterAll(async () => {
  redis?.disconnect();
  replica?.kill('SIGCONT');
  replica?.kill('SIGKILL');
  await primary?.stop();
  await rm(replicaDir, { recursive: true, force: true });
});

describe('ReplicaAcks', () => {
  it('sends no WAIT when no replica is asked for (TD_REDIS_REPLICA_ACKS=0)', async () => {
    const before = await waitCalls();
    const none = new ReplicaAcks(redis, 0, 1_000);
    await redis.set('k0', 'v');
    await none.confirm('k0', 'a write');
    expect(none.enabled).toBe(false);
    expect(await waitCalls()).toBe(before);
  });

  it('confirms a write its replica holds, grouping the WAITs of points asked together', async () => {
    const acks = new ReplicaAcks(redis, 1, 1_000);
    const before = await waitCalls();
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        await redis.set(`k${i}`, 'v');
        await acks.confirm(`k${i}`, `write ${i}`);
      }),
    );
    const sent = (await waitCalls()) - before;
    expect(sent).toBeGreaterThanOrEqual(1);
    expect(sent).toBeLessThan(20);
  });

  it('refuses a point its replica does not acknowledge in time, naming the setting', async () => {
    const acks = new ReplicaAcks(redis, 1, 300);
    replica.kill('SIGSTOP');
    try {
      await redis.set('paused', 'v');
      const e = await acks.confirm('paused', "round r1's begin").catch((x: unknown) => x);
      expect(isNotDurable(e)).toBe(true);
      expect((e as Error).message).toMatch(
        /round r1's begin was acknowledged by 0 of the 1 Redis replicas TD_REDIS_REPLICA_ACKS asks for within 300 ms/,
      );
    } finally {
      replica.kill('SIGCONT');
    }
  });

  it('refuses, as not durable, a point whose node is now a replica (a primary demoted by a failover)', async () => {
    // A coordinator's or worker's WAIT reaches the old primary after CLUSTER FAILOVER demoted it:
    // Redis answers "WAIT cannot be used with replica instances"; the write may be lost, so the
    // point is refused (503 unavailable / the side effect not run), never a handler_error.
    const demoted = connectRedis({ url: `redis://127.0.0.1:${replicaPort}` });
    try {
      const e = await new ReplicaAcks(demoted, 1, 200).confirm('k1', "the call's start").catch((x: unknown) => x);
      expect(isNotDurable(e), String(e)).toBe(true);
      expect((e as Error).message).toMatch(/the call's start was written to a Redis node that is no longer a primary/);
    } finally {
      demoted.disconnect();
    }
  });

  it('refuses, as not durable, a point whose WAIT was blocked when its node was demoted', async () => {
    // The WAIT is in flight when the failover comes: Redis ends it with "UNBLOCKED force unblock
    // from blocking operation, instance state changed (master -> replica?)".
    const lone = await spawnRedisServer();
    const node = connectRedis({ url: lone.url });
    const admin = connectRedis({ url: lone.url });
    try {
      await node.set('k2', 'v');
      const pending = new ReplicaAcks(node, 1, 20_000).confirm('k2', "the call's start").catch((x: unknown) => x);
      await until(async () => /blocked_clients:1/.test(await (admin as Redis).info('clients')), {
        timeoutMs: 5_000,
        what: 'WAIT blocked',
      });
      await (admin as Redis).replicaof('127.0.0.1', new URL(primary.url).port);
      const e = await pending;
      expect(isNotDurable(e), String(e)).toBe(true);
      expect((e as Error).message).toMatch(/the call's start was written to a Redis node that is no longer a primary/);
    } finally {
      node.disconnect();
      admin.disconnect();
      await lone.stop();
    }
  });

  it('refuses when more replicas are asked for than exist', async () => {
    await redis.set('two', 'v');
    const e = await new ReplicaAcks(redis, 2, 200).confirm('two', 'a commit').catch((x: unknown) => x);
    expect(isNotDurable(e)).toBe(true);
  });
});

describe('the command deadline (TD_REDIS_COMMAND_TIMEOUT_MS)', () => {
  it('ends a command past it, but not a blocking read on a duplicate', async () => {
    const quick = connectRedis({ url: primary.url }, { commandTimeoutMs: 300 });
    const reader = duplicateClient(quick);
    try {
      await expect((quick as Redis).xread('BLOCK', 1_000, 'STREAMS', 'nothing-here', '$')).rejects.toThrow(
        /Command timed out/,
      );
      expect(await (reader as Redis).xread('BLOCK', 1_000, 'STREAMS', 'nothing-here', '$')).toBeNull();
    } finally {
      quick.disconnect();
      reader.disconnect();
    }
  });
});
