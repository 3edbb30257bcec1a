import { type ExecJob, type ExecOutcome, type Executor, isToolError } from '@tool-dispatch/shared';

export type FakeHandler = (args: Record<string, unknown>, job: ExecJob, signal: AbortSignal) => Promise<unknown>;

/** An Executor for engine tests: programmable handlers, and a log of what ran when. */
export class FakeExecutor implements Executor {
  readonly handlers = new Map<string, FakeHandler>();
  readonly started: ExecJob[] = [];
  readonly spans: Array<{ job: ExecJob; start: number; end: number }> = [];
  inFlight = 0;
  maxInFlight = 0;
  private clock = 0;

  on(name: string, handler: FakeHandler): this {
    this.handlers.set(name, handler);
    return this;
  }

  async execute(job: ExecJob, signal: AbortSignal): Promise<ExecOutcome> {
    const h = this.handlers.get(job.name);
    if (!h) return { status: 'error', code: 'handler_error', message: `no handler for ${job.name}`, durationMs: 0 };
    this.started.push(job);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const start = ++this.clock;
    try {
      const output = await h(job.args, job, signal);
      return { status: 'ok', output, durationMs: 1, ranOn: 'fake' };
    } catch (e) {
      if (isToolError(e)) return { status: 'error', code: e.code, message: e.message, durationMs: 1, ranOn: 'fake' };
      if (signal.aborted)
        return { status: 'error', code: 'cancelled', message: 'cancelled', durationMs: 1, ranOn: 'fake' };
      return {
        status: 'error',
        code: 'handler_error',
        message: e instanceof Error ? e.message : String(e),
        durationMs: 1,
        ranOn: 'fake',
      };
    } finally {
      this.inFlight--;
      this.spans.push({ job, start, end: ++this.clock });
    }
  }

  async handlerNames(): Promise<ReadonlySet<string>> {
    return new Set(this.handlers.keys());
  }

  async close(): Promise<void> {}

  countOf(name: string): number {
    return this.started.filter((j) => j.name === name).length;
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
