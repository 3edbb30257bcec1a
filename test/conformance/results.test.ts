import { describe, expect, it } from 'vitest';
import { type Call, direct, type Result, type RoundAnswer, rt, uid } from './api.js';
import { describeModes, tagOf, useService } from './fixture.js';

const STATUSES = ['ok', 'error', 'deduped', 'cached', 'schema', 'refused', 'unknown', 'invalid', 'denied'];
const ERROR_CODES = ['handler_error', 'timeout', 'worker_lost', 'cancelled'];
const STOPPED = ['refused', 'unknown', 'invalid', 'denied'];
const SUCCESS = ['ok', 'deduped', 'cached'];

/** API.md's Result, checked field by field for its status. */
function expectResultShape(r: Result): void {
  const where = JSON.stringify(r);
  expect(typeof r.id, where).toBe('string');
  expect(typeof r.name, where).toBe('string');
  expect(STATUSES, where).toContain(r.status);
  expect(typeof r.durationMs, where).toBe('number');
  expect(Number.isFinite(r.durationMs) && r.durationMs >= 0, where).toBe(true);
  if (SUCCESS.includes(r.status)) {
    expect(r.output, where).toBeDefined();
    expect(r.error, where).toBeUndefined();
  }
  if (r.status === 'error') {
    expect(ERROR_CODES, where).toContain(r.error?.code);
    expect(r.error?.message.length, where).toBeGreaterThan(0);
  }
  if (STOPPED.includes(r.status)) {
    expect(r.error?.code, where).toBe(r.status);
    expect(typeof r.error?.message, where).toBe('string');
    expect(r.error?.message.length, where).toBeGreaterThan(10);
    expect(r.output, where).toBeUndefined();
  }
  if (r.status === 'schema') {
    expect(r.output?.tool?.name, where).toBe(r.name);
    expect(typeof r.output?.tool?.description, where).toBe('string');
    expect(r.output?.tool?.parameters?.type, where).toBe('object');
    expect(typeof r.output?.message, where).toBe('string');
    const problems = r.output?.problems;
    expect(problems === undefined || (Array.isArray(problems) && problems.every((p) => typeof p === 'string'))).toBe(
      true,
    );
  }
  if (r.status === 'deduped') {
    expect(typeof r.dedupedFrom, where).toBe('string');
  } else {
    expect(r.dedupedFrom, where).toBeUndefined();
  }
}

// API.md "Result": one shape per status; the format views; the history of every status.
describeModes('result shape', (mode) => {
  const f = useService(mode);

  /** One round that ends in every status, the `denied` one by a person's answer. */
  async function everyStatus(query?: string) {
    const s = await f.api.session(['calculate', 'http_request', 'run_command', 'read_files'], { provider: 'openai' });
    const url = f.target.url('echo', tagOf('shape'));
    await f.api.one(s, rt('http_request', { url })); // primes the cache, in another run
    const run = uid('run');
    const calls: Call[] = [
      rt('calculate', { expression: '1+1' }),
      rt('calculate', { expression: '1+1' }),
      rt('http_request', { url }),
      rt('write_todo', { items: 'not a list' }),
      direct('calculate', { expression: '1' }),
      rt('no_such_tool', {}),
      rt('calculate', { expression: 5 }),
      rt('run_command', { command: 'true' }),
      rt('read_files', { paths: ['/etc/hostname'] }),
    ];
    const pending = f.api.round(s, run, calls, query ? { query } : {});
    const [c] = await f.api.waitPending(s, 1);
    await f.api.answer(s, c?.confirmationId ?? '', { approve: false });
    return { s, run, calls, b: await pending };
  }

  it('answers each status with the fields API.md gives it', async () => {
    const { calls, b } = await everyStatus();
    expect(b.results.map((r) => r.status)).toEqual([
      'ok',
      'deduped',
      'cached',
      'schema',
      'refused',
      'unknown',
      'invalid',
      'denied',
      'error',
    ]);
    b.results.forEach(expectResultShape);
    expect(b.results.map((r) => r.name)).toEqual([
      'calculate',
      'calculate',
      'http_request',
      'write_todo',
      'calculate',
      'no_such_tool',
      'calculate',
      'run_command',
      'read_files',
    ]);
    const [ok, deduped, cached, schema] = b.results;
    expect(ok?.output).toEqual({ value: 2 });
    expect(deduped).toMatchObject({ output: { value: 2 }, dedupedFrom: calls[0]?.id });
    expect(deduped?.dedupedFromRound === undefined || deduped.dedupedFromRound === b.round).toBe(true);
    expect(cached?.output.status).toBe(200);
    expect(schema?.output.problems.length).toBeGreaterThan(0);
    expect(schema?.output.problems.join(' ')).toMatch(/items/);
    expect(b.results[8]?.error?.code).toBe('handler_error');
  });

  it('sends schema problems only when the args sent do not validate', async () => {
    const s = await f.api.session([]);
    const b = await f.api.round(s, uid('run'), [
      rt('calculate', { expression: '1+1' }),
      rt('write_todo', { items: [{ text: 'fine' }] }),
    ]);
    for (const r of b.results) {
      expectResultShape(r);
      expect(r.status).toBe('schema');
      expect(r.output.problems === undefined || r.output.problems.length === 0, JSON.stringify(r)).toBe(true);
    }
  });

  it('reports the error codes timeout and cancelled with a message', async () => {
    const s = await f.api.session(['run_command'], { provider: 'openai', autoApprove: 'all' });
    const timeout = await f.api.one(s, rt('run_command', { command: 'sleep 10', timeoutMs: 300 }));
    expectResultShape(timeout);
    expect(timeout.error?.code).toBe('timeout');
    expect(timeout.error?.message).toMatch(/deadline|timed out|timeout/i);
    const run = uid('run');
    const pending = f.api.round(s, run, [rt('run_command', { command: 'sleep 10' })]);
    await new Promise((r) => setTimeout(r, 300));
    await f.api.request('DELETE', `/v1/sessions/${s}/runs/${run}`);
    const [cancelled] = (await pending).results;
    expectResultShape(cancelled as Result);
    expect(cancelled?.error?.code).toBe('cancelled');
  });

  it('names run_tool itself when run_tool is called without a tool name', async () => {
    const s = await f.api.session([]);
    const b = await f.api.round(s, uid('run'), [
      { id: uid('c'), name: 'run_tool', args: { args: {} } },
      rt('run_tool', { name: 'calculate', args: {} }),
    ]);
    for (const r of b.results) {
      expectResultShape(r);
      expect(r).toMatchObject({ name: 'run_tool', status: 'invalid' });
    }
  });

  it('ends args that are not a JSON object invalid, for every call shape', async () => {
    const s = await f.api.session(['calculate']);
    const b = await f.api.round(s, uid('run'), [
      { id: uid('c'), type: 'function', function: { name: 'run_tool', arguments: '{not json' } } as unknown as Call,
      { id: uid('c'), name: 'run_tool', args: '[1,2]' },
      { id: uid('c'), name: 'run_tool', args: { name: 'calculate', args: '"text"' } },
      { type: 'tool_use', id: uid('c'), name: 'run_tool', input: { name: 'calculate', args: [1] } } as unknown as Call,
    ]);
    for (const r of b.results) {
      expectResultShape(r);
      expect(r.status, JSON.stringify(r)).toBe('invalid');
    }
  });

  describe('the format views', () => {
    it('adds OpenAI tool messages: content is the JSON output, or the error message', async () => {
      const { calls, b } = await everyStatus('format=openai');
      const answer = b as RoundAnswer;
      expect(answer.messages).toHaveLength(calls.length);
      answer.messages?.forEach((m, i) => {
        const r = b.results[i] as Result;
        expect(m).toEqual({ role: 'tool', tool_call_id: calls[i]?.id, content: expect.any(String) });
        if (r.error) expect(m.content).toBe(r.error.message);
        else expect(JSON.parse(m.content as string)).toEqual(r.output);
      });
    });

    it('adds Anthropic tool_result blocks: is_error false only for ok, deduped and cached', async () => {
      const { calls, b } = await everyStatus('format=anthropic');
      expect(b.content).toHaveLength(calls.length);
      b.content?.forEach((blk, i) => {
        const r = b.results[i] as Result;
        expect(blk).toEqual({
          type: 'tool_result',
          tool_use_id: calls[i]?.id,
          content: expect.any(String),
          is_error: !SUCCESS.includes(r.status),
        });
        if (r.error) expect(blk.content).toBe(r.error.message);
        else expect(JSON.parse(blk.content as string)).toEqual(r.output);
      });
    });
  });

  describe('the history', () => {
    it('records every status, oldest first, as {round, run, at, ...Result}', async () => {
      const { s, run, b } = await everyStatus();
      const history = await f.api.history(s);
      const mine = history.filter((e) => e.round === b.round);
      expect(mine.map((e) => e.status)).toEqual(b.results.map((r) => r.status));
      mine.forEach((e, i) => {
        const { round, run: entryRun, at, ...result } = e;
        expect(entryRun).toBe(run);
        expect(Number.isNaN(new Date(at as string).getTime())).toBe(false);
        expect(result).toEqual(b.results[i]);
      });
      const calc = await f.api.history(s, 'calculate');
      expect(calc.length).toBeGreaterThanOrEqual(4);
      expect(calc.every((e) => e.name === 'calculate')).toBe(true);
      expect(history.indexOf(mine[0] as never)).toBeGreaterThan(0); // the setup rounds came first
    });
  });
});
