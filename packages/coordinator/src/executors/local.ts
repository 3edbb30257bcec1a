import type { AnnouncedTool, ExecJob, ExecOutcome, ExecuteOptions, Executor } from '@tool-dispatch/shared';
import type { CallProgress, CallProgressState } from './call-progress.js';

/** How a LocalExecutor runs a job: the worker's `runJob` over a handler registry, given by `app/`. */
export interface LocalRunner {
  run(job: ExecJob, signal: AbortSignal, ranOn: string, options?: ExecuteOptions): Promise<ExecOutcome>;
  /** The same array while the names did not change (the set made of it is kept). */
  names(): readonly string[];
  /** The in-process MCP servers' tools (the same array while nothing changed). */
  tools?(): readonly AnnouncedTool[];
}

/** Most finished calls kept for `progress` while their rounds are not committed (a round that failed leaves its own). */
const MAX_KEPT_PROGRESS = 10_000;

/** Embedded mode's pass-2 seam: runs handlers in this process with the same deadline rules as a worker. */
export class LocalExecutor implements Executor, CallProgress {
  /** (v1.3) Calls running here, or ended and their round not committed yet: `<round> <call index>` → state. */
  private readonly states = new Map<string, CallProgressState>();
  private names: { of: readonly string[] | undefined; set: ReadonlySet<string> } = { of: undefined, set: new Set() };

  constructor(
    private readonly runner: LocalRunner,
    private readonly ranOn = 'embedded',
  ) {}

  async execute(job: ExecJob, signal: AbortSignal, options?: ExecuteOptions): Promise<ExecOutcome> {
    const key = `${job.round} ${job.callIndex}`;
    this.states.set(key, 'running');
    try {
      return await this.runner.run(job, signal, this.ranOn, options);
    } finally {
      if (this.states.size > MAX_KEPT_PROGRESS) this.states.delete(this.states.keys().next().value as string);
      this.states.set(key, 'done');
    }
  }

  committed(round: string, callIndexes: readonly number[]): void {
    for (const i of callIndexes) this.states.delete(`${round} ${i}`);
  }

  async progress(
    _origin: string | undefined,
    round: string,
    callIndexes: readonly number[],
  ): Promise<(CallProgressState | undefined)[]> {
    return callIndexes.map((i) => this.states.get(`${round} ${i}`));
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
