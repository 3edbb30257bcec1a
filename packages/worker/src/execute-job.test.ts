import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ExecJob, ExecOutcome, Handler, HandlerConfig, HandlerContext } from '@tool-dispatch/shared';
import { MAX_OUTPUT_BYTES, ToolError } from '@tool-dispatch/shared';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { makeWorkspace } from '../testing/workspace.js';
import { runJob } from './execute-job.js';
import { createBuiltinRegistry, HandlerRegistry } from './registry.js';

const config: HandlerConfig = { httpAllow: [], searchUrl: undefined };
let ws: { dir: string; cleanup: () => Promise<void> };

beforeEach(async () => {
  ws = await makeWorkspace();
});
afterEach(() => ws.cleanup());

function job(name: string, overrides: Partial<ExecJob> = {}): ExecJob {
  return {
    session: 's1',
    tenant: 't1',
    run: 'r1',
    round: 'rnd_1',
    toolCallId: 'c1',
    callIndex: 0,
    name,
    args: {},
    workspace: ws.dir,
    queue: 'concurrent',
    timeoutMs: 5000,
    ...overrides,
  };
}

function registryWith(name: string, handler: Handler): HandlerRegistry {
  const registry = new HandlerRegistry();
  registry.register(name, handler);
  return registry;
}

const never = new AbortController().signal;
const run = (registry: HandlerRegistry, j: ExecJob, signal = never, settleGraceMs = 200) =>
  runJob(registry, j, signal, config, 'test-worker', { settleGraceMs });

describe('runJob', () => {
  it('returns ok with the output, the duration and where it ran', async () => {
    const registry = registryWith('echo', async (args) => ({ got: args }));
    const outcome = await run(registry, job('echo', { args: { a: 1 } }));
    expect(outcome).toMatchObject({ status: 'ok', output: { got: { a: 1 } }, ranOn: 'test-worker' });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('gives the handler a context built from the job', async () => {
    let seen: HandlerContext | undefined;
    const registry = registryWith('peek', async (_args, ctx) => {
      seen = ctx;
      return null;
    });
    await runJob(registry, job('peek', { timeoutMs: 1234 }), never, { httpAllow: ['x:1'], searchUrl: 'http://s' }, 'w');
    expect(seen).toMatchObject({
      workspace: ws.dir,
      session: 's1',
      tenant: 't1',
      run: 'r1',
      round: 'rnd_1',
      toolCallId: 'c1',
      callId: 'c1',
      timeoutMs: 1234,
      config: { httpAllow: ['x:1'], searchUrl: 'http://s' },
    });
    expect(seen?.signal.aborted).toBe(false);
  });

  it('answers handler_error for a tool with no registered handler', async () => {
    await expect(run(new HandlerRegistry(), job('nope'))).resolves.toMatchObject({
      status: 'error',
      code: 'handler_error',
      message: 'no handler registered for nope',
    });
  });

  it('creates the workspace directory before running', async () => {
    const workspace = path.join(ws.dir, 'tenant', 'session');
    const registry = registryWith('check', async (_args, ctx) => (await stat(ctx.workspace)).isDirectory());
    await expect(run(registry, job('check', { workspace }))).resolves.toMatchObject({ status: 'ok', output: true });
  });

  describe('when the handler throws', () => {
    it('keeps the code, message and details of a ToolError', async () => {
      const registry = registryWith('t', async () => {
        throw new ToolError('handler_error', 'the file is locked', { path: 'a' });
      });
      await expect(run(registry, job('t'))).resolves.toMatchObject({
        status: 'error',
        code: 'handler_error',
        message: 'the file is locked',
        details: { path: 'a' },
      });
    });

    it('turns any other throw into handler_error with its message', async () => {
      const registry = registryWith('t', async () => {
        throw new TypeError('cannot read properties of undefined');
      });
      await expect(run(registry, job('t'))).resolves.toMatchObject({
        status: 'error',
        code: 'handler_error',
        message: 'cannot read properties of undefined',
      });
    });

    it('catches a handler that throws synchronously', async () => {
      const registry = registryWith('t', (() => {
        throw new Error('sync boom');
      }) as unknown as Handler);
      await expect(run(registry, job('t'))).resolves.toMatchObject({ code: 'handler_error', message: 'sync boom' });
    });

    it('does not let a handler claim worker_lost', async () => {
      const registry = registryWith('t', async () => {
        throw new ToolError('worker_lost', 'lies');
      });
      await expect(run(registry, job('t'))).resolves.toMatchObject({ code: 'handler_error' });
    });
  });

  describe('when the deadline passes', () => {
    it('reports timeout for a handler that ignores its signal, noting it may still be running', async () => {
      // On fake timers: the answer comes exactly at the deadline plus the settle grace (150 + 200 ms), not later.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
      try {
        let began!: () => void;
        const running = new Promise<void>((resolve) => {
          began = resolve;
        });
        const registry = registryWith('stuck', () => {
          began();
          return new Promise(() => {});
        });
        let outcome: ExecOutcome | undefined;
        void run(registry, job('stuck', { timeoutMs: 150 })).then((o) => {
          outcome = o;
        });
        await running;
        await vi.advanceTimersByTimeAsync(150 + 200 - 1);
        expect(outcome, 'answered before its deadline and grace were over').toBeUndefined();
        await vi.advanceTimersByTimeAsync(1);
        expect(outcome).toMatchObject({
          status: 'error',
          code: 'timeout',
          message: 'stuck passed its deadline of 150 ms; it ignored the stop signal and may still be running',
          durationMs: 150 + 200,
        });
      } finally {
        vi.useRealTimers();
      }
    });

    it('reports timeout without the note when the handler stops on its signal', async () => {
      const registry = registryWith('polite', (_args, ctx) => {
        return new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(new Error('stopped')));
        });
      });
      await expect(run(registry, job('polite', { timeoutMs: 100 }))).resolves.toMatchObject({
        code: 'timeout',
        message: 'polite passed its deadline of 100 ms',
      });
    });

    it("keeps a stopped handler's own timeout message and details", async () => {
      const registry = createBuiltinRegistry();
      // The grace is the handler's time to kill the group and report: generous, so a loaded machine still sees its report.
      const outcome = await run(
        registry,
        // A deadline a sandbox spawn on a loaded machine still meets with `echo hi` done.
        job('run_command', { args: { command: 'echo hi; sleep 30' }, timeoutMs: 2_000 }),
        never,
        10_000,
      );
      expect(outcome).toMatchObject({
        code: 'timeout',
        message: expect.stringMatching(/deadline.*process group killed/),
        details: { stdout: 'hi\n' },
      });
    });
  });

  it('leaves no timer behind once the call ends', async () => {
    vi.useFakeTimers();
    try {
      const outcome = await run(
        registryWith('quick', async () => 'done'),
        job('quick', { timeoutMs: 60_000 }),
      );
      expect(outcome).toMatchObject({ status: 'ok', output: 'done' });
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  describe('when the caller cancels', () => {
    it('reports cancelled, not timeout', async () => {
      const controller = new AbortController();
      const registry = registryWith('polite', (_args, ctx) => {
        return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
      });
      setTimeout(() => controller.abort(), 50);
      await expect(run(registry, job('polite', { timeoutMs: 5000 }), controller.signal)).resolves.toMatchObject({
        status: 'error',
        code: 'cancelled',
        message: 'the call was cancelled',
      });
    });

    it('reports cancelled for a handler that ignores its signal, noting it may still be running', async () => {
      const controller = new AbortController();
      const registry = registryWith('stuck', () => new Promise(() => {}));
      setTimeout(() => controller.abort(), 50);
      await expect(run(registry, job('stuck'), controller.signal)).resolves.toMatchObject({
        code: 'cancelled',
        message: expect.stringMatching(/may still be running/),
      });
    });

    it('does not start the handler when the signal is already aborted', async () => {
      let ran = false;
      const registry = registryWith('t', async () => {
        ran = true;
      });
      await expect(run(registry, job('t'), AbortSignal.abort())).resolves.toMatchObject({ code: 'cancelled' });
      expect(ran).toBe(false);
    });
  });

  describe("with the call's own controller (as the queue worker passes it)", () => {
    const runOwn = (registry: HandlerRegistry, j: ExecJob, controller: AbortController) =>
      runJob(registry, j, controller.signal, config, 'test-worker', { settleGraceMs: 200, controller });
    const polite = () =>
      registryWith('polite', (_args, ctx) => {
        return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
      });

    it('lets the deadline abort that controller, and reports timeout', async () => {
      const controller = new AbortController();
      const outcome = await runOwn(polite(), job('polite', { timeoutMs: 80 }), controller);
      expect(outcome).toMatchObject({ code: 'timeout', message: 'polite passed its deadline of 80 ms' });
      expect(controller.signal.reason).toMatchObject({ name: 'TimeoutError' });
    });

    it('reports cancelled when the caller aborts it', async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('cancelled by the coordinator')), 50);
      await expect(runOwn(polite(), job('polite', { timeoutMs: 5000 }), controller)).resolves.toMatchObject({
        code: 'cancelled',
        message: 'the call was cancelled',
      });
    });

    it('leaves no timer behind, and the controller not aborted, once the call ends', async () => {
      vi.useFakeTimers();
      try {
        const controller = new AbortController();
        const outcome = await runOwn(
          registryWith('quick', async () => 'done'),
          job('quick'),
          controller,
        );
        expect(outcome).toMatchObject({ status: 'ok', output: 'done' });
        expect(vi.getTimerCount()).toBe(0);
        expect(controller.signal.aborted).toBe(false);
      } finally {
        vi.useRealTimers();
      }
    });
  });

  describe('when the output is too large or not JSON', () => {
    it('answers handler_error naming the size and the limit', async () => {
      const registry = registryWith('big', async () => ({ s: 'x'.repeat(MAX_OUTPUT_BYTES) }));
      await expect(run(registry, job('big'))).resolves.toMatchObject({
        status: 'error',
        code: 'handler_error',
        message: `the tool's output is ${MAX_OUTPUT_BYTES + 8} bytes, over the limit of ${MAX_OUTPUT_BYTES} bytes`,
      });
    });

    it('answers handler_error for output that cannot be serialised', async () => {
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const registry = registryWith('cyc', async () => cyclic);
      await expect(run(registry, job('cyc'))).resolves.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/not JSON/),
      });
    });

    it('returns the output as JSON would carry it, as in distributed mode', async () => {
      const registry = registryWith('d', async () => ({ at: new Date(0), gone: undefined }));
      await expect(run(registry, job('d'))).resolves.toMatchObject({
        status: 'ok',
        output: { at: '1970-01-01T00:00:00.000Z' },
      });
    });
  });

  it('runs a built-in end to end through the registry', async () => {
    const registry = createBuiltinRegistry();
    const edit = await run(registry, job('edit_file', { args: { path: 'x/y.txt', content: 'hey' } }));
    expect(edit).toMatchObject({ status: 'ok', output: { path: 'x/y.txt', bytes: 3, created: true } });
    expect(await readFile(path.join(ws.dir, 'x/y.txt'), 'utf8')).toBe('hey');
    await expect(run(registry, job('read_files', { args: { paths: ['../etc/passwd'] } }))).resolves.toMatchObject({
      status: 'error',
      code: 'handler_error',
      message: expect.stringMatching(/escapes the session workspace/),
    });
  });
});

describe('runJob under a result budget (API.md v1.2)', () => {
  const big = { rows: Array.from({ length: 400 }, (_, i) => ({ i, text: `row ${i} 🙂` })) };

  it('writes an output over the call budget to .tool-results/ in the workspace and answers a preview', async () => {
    const registry = registryWith('api_rows', async () => big);
    const outcome = await run(registry, job('api_rows', { resultBudget: { call: 1500 } }));
    expect(outcome.status).toBe('ok');
    const out = (outcome as { output: { truncated: boolean; artifact: { path: string; bytes: number } } }).output;
    expect(out.truncated).toBe(true);
    expect(JSON.stringify(out).length).toBeLessThanOrEqual(1500);
    const text = await readFile(path.join(ws.dir, out.artifact.path), 'utf8');
    expect(JSON.parse(text)).toEqual(big);
    expect(text).toContain('\n  "rows": [');
    expect(out.artifact.bytes).toBe((await stat(path.join(ws.dir, out.artifact.path))).size);
  });

  it('under a round budget only, writes a long output’s artifact beside it and answers the output whole', async () => {
    const registry = registryWith('api_rows', async () => big);
    const outcome = await run(registry, job('api_rows', { resultBudget: { round: 100_000 } }));
    expect(outcome).toMatchObject({
      status: 'ok',
      output: big,
      artifact: { path: expect.stringMatching(/^\.tool-results\//) },
    });
    // No longer than the round could ever cut (standbyOver, from the round's size): no artifact.
    const short = await run(
      registry,
      job('api_rows', { callIndex: 1, resultBudget: { round: 100_000, standbyOver: 50_000 } }),
    );
    expect(short).toEqual({ status: 'ok', output: big, durationMs: expect.any(Number), ranOn: 'test-worker' });
  });

  it('takes an output past MAX_OUTPUT_BYTES when its replacement fits, and answers as before without a budget', async () => {
    const huge = 'y'.repeat(MAX_OUTPUT_BYTES + 100);
    const registry = registryWith('api_huge', async () => ({ huge }));
    const budgeted = await run(registry, job('api_huge', { resultBudget: { call: 2000 } }));
    expect(budgeted).toMatchObject({ status: 'ok', output: { truncated: true } });
    const plain = await run(registry, job('api_huge'));
    expect(plain).toMatchObject({ status: 'error', code: 'handler_error' });
    const small = await run(
      registryWith('api_small', async () => ({ a: 1 })),
      job('api_small', { resultBudget: { call: 2000, round: 5000 } }),
    );
    expect(small).toEqual({ status: 'ok', output: { a: 1 }, durationMs: expect.any(Number), ranOn: 'test-worker' });
  });
});
