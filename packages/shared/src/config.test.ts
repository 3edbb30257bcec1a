import { describe, expect, it } from 'vitest';
import { DEFAULT_WORKER_SERIAL_CONCURRENCY, MAX_QUEUE_SHARDS, resolveConfig } from './config.js';

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
