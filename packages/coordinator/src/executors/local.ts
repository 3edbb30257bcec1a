import type { ExecJob, ExecOutcome, Executor } from '@tool-dispatch/shared';

/** How a LocalExecutor runs a job: the worker's `runJob` over a handler registry, given by `app/`. */
export interface LocalRunner {
  run(job: ExecJob, signal: AbortSignal, ranOn: string): Promise<ExecOutcome>;
  names(): Iterable<string>;
}

/** Embedded mode's pass-2 seam: runs handlers in this process with the same deadline rules as a worker. */
export class LocalExecutor implements Executor {
  constructor(
    private readonly runner: LocalRunner,
    private readonly ranOn = 'embedded',
  ) {}

  execute(job: ExecJob, signal: AbortSignal): Promise<ExecOutcome> {
    return this.runner.run(job, signal, this.ranOn);
  }

  async handlerNames(): Promise<ReadonlySet<string>> {
    return new Set(this.runner.names());
  }

  async close(): Promise<void> {}
}
