import type { DispatchConfig } from '@tool-dispatch/shared';
import type { RunningCoordinator } from './serve.js';

/** Distributed wiring (coordinator over BullMQ + Redis workers): filled in with the queue layer. */
export async function distributedCoordinator(_options: {
  config: DispatchConfig;
  port: number;
  host: string;
  log: (line: string) => void;
  workers: number;
}): Promise<RunningCoordinator> {
  throw new Error('distributed mode is being wired; unset REDIS_URL to run embedded');
}

export async function runWorkerProcess(_options: {
  config: DispatchConfig;
  port: number;
  log: (line: string) => void;
}): Promise<{ stop(): Promise<void> }> {
  throw new Error('the worker process is being wired');
}
