import type { ExecJob, ExecOutcome, Executor, HandlerConfig } from '@tool-dispatch/shared';
import { type HandlerRegistry, runJob } from '@tool-dispatch/worker';

/** Embedded mode's pass-2 seam: runs handlers in this process with the same deadline rules as a worker. */
export class LocalExecutor implements Executor {
  constructor(
    private readonly registry: HandlerRegistry,
    private readonly config: HandlerConfig,
    private readonly ranOn = 'embedded',
  ) {}

  execute(job: ExecJob, signal: AbortSignal): Promise<ExecOutcome> {
    return runJob(this.registry, job, signal, this.config, this.ranOn);
  }

  async handlerNames(): Promise<ReadonlySet<string>> {
    return new Set(this.registry.names());
  }

  async close(): Promise<void> {}
}
