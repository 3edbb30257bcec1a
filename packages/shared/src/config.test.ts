import { describe, expect, it } from 'vitest';
import { DEFAULT_WORKER_SERIAL_CONCURRENCY, resolveConfig } from './config.js';

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
