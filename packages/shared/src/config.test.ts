import { describe, expect, it } from 'vitest';
import { DEFAULT_WORKER_SERIAL_CONCURRENCY, MAX_QUEUE_SHARDS, resolveConfig } from './config.js';
import { ConfigError } from './errors.js';

describe('TD_WORKER_SERIAL_CONCURRENCY', () => {
  it('defaults to 8 serial-queue jobs per worker', () => {
    expect(DEFAULT_WORKER_SERIAL_CONCURRENCY).toBe(8);
    expect(resolveConfig({}, {}).workerSerialConcurrency).toBe(8);
    expect(resolveConfig({}, { TD_WORKER_SERIAL_CONCURRENCY: '' }).workerSerialConcurrency).toBe(8);
  });

  it('reads a positive integer, and an option wins over it', () => {
    expect(resolveConfig({}, { TD_WORKER_SERIAL_CONCURRENCY: '1' }).workerSerialConcurrency).toBe(1);
    expect(resolveConfig({}, { TD_WORKER_SERIAL_CONCURRENCY: '32' }).workerSerialConcurrency).toBe(32);
    const env = { TD_WORKER_SERIAL_CONCURRENCY: '32' };
    expect(resolveConfig({ workerSerialConcurrency: 2 }, env).workerSerialConcurrency).toBe(2);
  });

  it.each(['0', '-1', '1.5', 'eight', ' '])('refuses %j, naming the variable and the value', (raw) => {
    expect(() => resolveConfig({}, { TD_WORKER_SERIAL_CONCURRENCY: raw })).toThrow(
      `TD_WORKER_SERIAL_CONCURRENCY must be a positive integer, got ${JSON.stringify(raw)}`,
    );
  });
});

describe('TD_SESSION_TTL_MS and TD_REDIS_TLS_CA', () => {
  it('keeps an idle session 7 days unless TD_SESSION_TTL_MS says otherwise', () => {
    expect(resolveConfig({}, {}).sessionTtlMs).toBe(7 * 24 * 60 * 60_000);
    expect(resolveConfig({}, { TD_SESSION_TTL_MS: '2000' }).sessionTtlMs).toBe(2000);
    expect(() => resolveConfig({}, { TD_SESSION_TTL_MS: '0' })).toThrow(
      'TD_SESSION_TTL_MS must be a positive integer, got "0"',
    );
  });

  it('keeps a finished round a day unless TD_ROUND_RETENTION_MS says otherwise (v1.3)', () => {
    expect(resolveConfig({}, {}).roundRetentionMs).toBe(86_400_000);
    expect(resolveConfig({}, { TD_ROUND_RETENTION_MS: '5000' }).roundRetentionMs).toBe(5000);
    for (const bad of ['0', '-1', 'soon', '1.5'])
      expect(() => resolveConfig({}, { TD_ROUND_RETENTION_MS: bad })).toThrow(
        `TD_ROUND_RETENTION_MS must be a positive integer, got ${JSON.stringify(bad)}`,
      );
  });

  it('reads the Redis CA file path from TD_REDIS_TLS_CA, unset by default', () => {
    expect(resolveConfig({}, {}).redisTlsCaFile).toBeUndefined();
    expect(resolveConfig({}, { TD_REDIS_TLS_CA: '/etc/td/redis-ca.pem' }).redisTlsCaFile).toBe('/etc/td/redis-ca.pem');
  });
});

describe('TD_QUEUE_SHARDS', () => {
  it('defaults to one shard of each queue and reads 1..64', () => {
    expect(resolveConfig({}, {}).queueShards).toBe(1);
    expect(resolveConfig({}, { TD_QUEUE_SHARDS: '3' }).queueShards).toBe(3);
    expect(resolveConfig({}, { TD_QUEUE_SHARDS: String(MAX_QUEUE_SHARDS) }).queueShards).toBe(64);
    expect(resolveConfig({ queueShards: 2 }, { TD_QUEUE_SHARDS: '3' }).queueShards).toBe(2);
  });

  it.each(['0', '-2', '2.5', 'three'])('refuses %j, naming the variable', (raw) => {
    expect(() => resolveConfig({}, { TD_QUEUE_SHARDS: raw })).toThrow(
      `TD_QUEUE_SHARDS must be a positive integer, got ${JSON.stringify(raw)}`,
    );
  });

  it('refuses more than 64 shards, saying the limit', () => {
    expect(() => resolveConfig({}, { TD_QUEUE_SHARDS: '65' })).toThrow('TD_QUEUE_SHARDS must be at most 64, got 65');
  });
});

describe('TD_FINISHED_JOB_RETENTION_MS and TD_OUTCOME_AFTER_COMMIT_TTL_MS', () => {
  it('keeps completed jobs an hour and committed outcomes 10 minutes unless told otherwise', () => {
    const defaults = resolveConfig({}, {});
    expect(defaults.finishedJobRetentionMs).toBe(60 * 60_000);
    expect(defaults.outcomeAfterCommitTtlMs).toBe(10 * 60_000);
    const short = resolveConfig({}, { TD_FINISHED_JOB_RETENTION_MS: '3000', TD_OUTCOME_AFTER_COMMIT_TTL_MS: '2000' });
    expect([short.finishedJobRetentionMs, short.outcomeAfterCommitTtlMs]).toEqual([3000, 2000]);
    expect(() => resolveConfig({}, { TD_FINISHED_JOB_RETENTION_MS: '-1' })).toThrow(
      'TD_FINISHED_JOB_RETENTION_MS must be a positive integer, got "-1"',
    );
  });
});

describe('TD_JOB_NAME', () => {
  it('names jobs after their tools unless a template says otherwise', () => {
    expect(resolveConfig({}, {}).jobName).toBe('{tools}');
    expect(resolveConfig({}, { TD_JOB_NAME: '{queue}:{session}/{run} {tools}' }).jobName).toBe(
      '{queue}:{session}/{run} {tools}',
    );
  });

  it('refuses a field it does not know, naming the ones it does, and a template over 200 characters', () => {
    expect(() => resolveConfig({}, { TD_JOB_NAME: '{tenant}-{tools}' })).toThrow(
      'TD_JOB_NAME names {tenant}; it may name {tools}, {session}, {run}, {round}, {queue}',
    );
    expect(() => resolveConfig({}, { TD_JOB_NAME: 'x'.repeat(201) })).toThrow(
      'TD_JOB_NAME must be at most 200 characters, got 201',
    );
  });
});

describe('TD_JOB_CALLS', () => {
  it("gathers up to a worker's default concurrency (16) of calls in a job unless told otherwise, and reads 1..64", () => {
    expect(resolveConfig({}, {}).jobCalls).toBe(16);
    expect(resolveConfig({}, { TD_JOB_CALLS: '1' }).jobCalls).toBe(1);
    expect(resolveConfig({}, { TD_JOB_CALLS: '5' }).jobCalls).toBe(5);
    expect(resolveConfig({}, { TD_JOB_CALLS: '64' }).jobCalls).toBe(64);
    expect(resolveConfig({ jobCalls: 2 }, { TD_JOB_CALLS: '5' }).jobCalls).toBe(2);
  });

  it.each(['0', '-1', '2.5', 'many', '65', '1000'])(
    'refuses %j with a ConfigError naming the variable and its range',
    (raw) => {
      let thrown: unknown;
      try {
        resolveConfig({}, { TD_JOB_CALLS: raw });
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(ConfigError);
      expect((thrown as Error).message).toBe(
        `TD_JOB_CALLS must be an integer from 1 to 64, got ${JSON.stringify(raw)}`,
      );
    },
  );
});

describe('TD_REDIS_REPLICA_ACKS, TD_REDIS_WAIT_MS and TD_REDIS_COMMAND_TIMEOUT_MS', () => {
  it('asks no replica, waits 1 s for them and gives each command 2 s unless told otherwise', () => {
    const c = resolveConfig({}, {});
    expect([c.redisReplicaAcks, c.redisWaitMs, c.redisCommandTimeoutMs]).toEqual([0, 1000, 2000]);
    const set = resolveConfig(
      {},
      { TD_REDIS_REPLICA_ACKS: '2', TD_REDIS_WAIT_MS: '500', TD_REDIS_COMMAND_TIMEOUT_MS: '3000' },
    );
    expect([set.redisReplicaAcks, set.redisWaitMs, set.redisCommandTimeoutMs]).toEqual([2, 500, 3000]);
  });

  it('refuses bad values with a ConfigError naming the setting (exit 2)', () => {
    const bad = (env: Record<string, string>) => () => resolveConfig({}, env);
    expect(bad({ TD_REDIS_REPLICA_ACKS: '-1' })).toThrow(ConfigError);
    expect(bad({ TD_REDIS_REPLICA_ACKS: 'one' })).toThrow(/TD_REDIS_REPLICA_ACKS must be an integer from 0 to 16/);
    expect(bad({ TD_REDIS_REPLICA_ACKS: '17' })).toThrow(/TD_REDIS_REPLICA_ACKS/);
    expect(bad({ TD_REDIS_WAIT_MS: '0' })).toThrow(/TD_REDIS_WAIT_MS must be a positive integer/);
    expect(bad({ TD_REDIS_COMMAND_TIMEOUT_MS: '1.5' })).toThrow(/TD_REDIS_COMMAND_TIMEOUT_MS must be a positive/);
    expect(bad({ TD_REDIS_COMMAND_TIMEOUT_MS: '50' })).toThrow(/at least 100 ms/);
  });

  it('refuses a WAIT that could not end before its own command deadline, when replicas are asked', () => {
    const env = { TD_REDIS_REPLICA_ACKS: '1', TD_REDIS_WAIT_MS: '2000', TD_REDIS_COMMAND_TIMEOUT_MS: '2000' };
    expect(() => resolveConfig({}, env)).toThrow(/TD_REDIS_WAIT_MS \(2000\) must be below TD_REDIS_COMMAND_TIMEOUT_MS/);
    expect(resolveConfig({}, { ...env, TD_REDIS_REPLICA_ACKS: '0' }).redisWaitMs).toBe(2000);
  });
});

describe('TD_MCP_TASK_AFTER_MS', () => {
  it('defaults to 2000 ms, reads 0 to 3600000, and refuses anything else naming it', () => {
    expect(resolveConfig({}, {}).mcpTaskAfterMs).toBe(2000);
    expect(resolveConfig({}, { TD_MCP_TASK_AFTER_MS: '0' }).mcpTaskAfterMs).toBe(0);
    expect(resolveConfig({}, { TD_MCP_TASK_AFTER_MS: '3600000' }).mcpTaskAfterMs).toBe(3_600_000);
    for (const bad of ['soon', '-1', '1.5', '3600001'])
      expect(() => resolveConfig({}, { TD_MCP_TASK_AFTER_MS: bad })).toThrow(/TD_MCP_TASK_AFTER_MS must be an integer/);
  });
});
