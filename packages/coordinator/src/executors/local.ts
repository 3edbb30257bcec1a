import type { AnnouncedTool, ExecJob, ExecOutcome, ExecuteOptions, Executor } from '@tool-dispatch/shared';

/** How a LocalExecutor runs a job: the worker's `runJob` over a handler registry, given by `app/`. */
export interface LocalRunner {
  run(job: ExecJob, signal: AbortSignal, ranOn: string, options?: ExecuteOptions): Promise<ExecOutcome>;
  /** The same array while the names did not change (the set made of it is kept). */
  names(): readonly string[];
  /** The in-process MCP servers' tools (the same array while nothing changed). */
  tools?(): readonly AnnouncedTool[];
}

/** Embedded mode's pass-2 seam: runs handlers in this process with the same deadline rules as a worker. */
export class LocalExecutor implements Executor {
  private names: { of: readonly string[] | undefined; set: ReadonlySet<string> } = { of: undefined, set: new Set() };

  constructor(
    private readonly runner: LocalRunner,
    private readonly ranOn = 'embedded',
  ) {}

  execute(job: ExecJob, signal: AbortSignal, options?: ExecuteOptions): Promise<ExecOutcome> {
    return this.runner.run(job, signal, this.ranOn, options);
  }

  async handlerNames(): Promise<ReadonlySet<string>> {
    const names = this.runner.names();
    if (names !== this.names.of) this.names = { of: names, set: new Set(names) };
    return this.names.set;
  }

  announcedTools(): readonly AnnouncedTool[] {
    return this.runner.tools?.() ?? NO_TOOLS;
  }

  async close(): Promise<void> {}
}

const NO_TOOLS: readonly AnnouncedTool[] = [];
