import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RESULT_CACHE_TTL_MS, resolveConfig, ToolError } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { until } from '../../../test/support/until.js';
import { MemoryConfirmHub } from './confirm/memory.js';
import { RequestError } from './dispatcher.js';
import { Engine } from './engine.js';
import type { DispatchEvent } from './events/event-bus.js';
import { MemoryEventBus } from './events/memory.js';
import { FakeExecutor, sleep } from './executors/fake.js';
import { MemoryInputHub } from './inputs/memory.js';
import { MemoryLimits } from './limits/memory.js';
import { commitRound } from './passes/commit.js';
import { MemoryStore } from './store/memory.js';

type Calls = Array<Record<string, unknown>>;

/** Polls `what` until it gives something (at most 3 s). */
let seq = 0;
const rt = (name: string, args: unknown = {}, id = `c${++seq}`) => ({ id, name: 'run_tool', args: { name, args } });
const direct = (name: string, args: unknown = {}, id = `c${++seq}`) => ({ id, name, args });

function fakeTools(): FakeExecutor {
  const ex = new FakeExecutor();
  ex.on('calculate', async (a) => ({
    value: Number(
      String(a.expression)
        .split('+')
        .reduce((s, x) => s + Number(x), 0),
    ),
  }));
  ex.on('read_files', async (a) => ({
    files: (a.paths as string[]).map((p) => ({ path: p, content: `content of ${p}` })),
  }));
  ex.on('find_files', async () => ({ paths: ['a.txt'] }));
  ex.on('edit_file', async (a) => ({ path: a.path, bytes: 1, created: a.path === 'new.txt' }));
  ex.on('run_command', async () => ({ exitCode: 0, stdout: '', stderr: '' }));
  ex.on('http_request', async (a) => ({ status: 200, headers: {}, body: `body of ${String(a.url)}` }));
  ex.on('fetch_page', async (a) => ({ url: a.url, status: 200, text: 'page' }));
  ex.on('write_todo', async (a) => ({ items: a.items }));
  return ex;
}

interface Setup {
  engine: Engine;
  ex: FakeExecutor;
  store: MemoryStore;
  events: DispatchEvent[];
  session: string;
  round(calls: Calls, run?: string, key?: string): Promise<Awaited<ReturnType<Engine['submitRound']>>>;
  clock: { now: number };
}

async function setup(
  opts: {
    provider?: string;
    autoApprove?: string[] | 'all';
    confirmTimeoutMs?: number;
    ex?: FakeExecutor;
    fetchAll?: boolean;
    tenant?: string;
  } = {},
): Promise<Setup> {
  const clock = { now: Date.now() };
  const store = new MemoryStore(() => clock.now);
  const ex = opts.ex ?? fakeTools();
  const config = resolveConfig(
    {
      workspaceRoot: mkdtempSync(path.join(tmpdir(), 'td-engine-')),
      confirmTimeoutMs: opts.confirmTimeoutMs ?? 60_000,
    },
    {},
  );
  const engine = new Engine({
    config,
    executor: ex,
    store,
    events: new MemoryEventBus(),
    confirmations: new MemoryConfirmHub(),
    inputs: new MemoryInputHub(),
    limits: new MemoryLimits(),
  });
  const session = `s${++seq}`;
  await engine.putSession(session, {
    provider: opts.provider ?? 'openai',
    ...(opts.autoApprove ? { autoApprove: opts.autoApprove } : {}),
    ...(opts.tenant ? { tenant: opts.tenant } : {}),
  });
  const events: DispatchEvent[] = [];
  await engine.subscribe(session, undefined, (e) => events.push(e));
  if (opts.fetchAll !== false) {
    await engine.submitRound({ session, run: 'setup', calls: [direct('find_tools', {})] });
  }
  return {
    engine,
    ex,
    store,
    events,
    session,
    clock,
    round: (calls, run = 'r1', key) =>
      engine.submitRound({ session, run, calls, ...(key ? { idempotencyKey: key } : {}) }),
  };
}

describe('pass 1: pre-flight', () => {
  describe('step 1: run_tool unwrapping', () => {
    it('turns run_tool({name, args}) into a call of the named tool', async () => {
      const t = await setup();
      const { results } = await t.round([rt('calculate', { expression: '1+2' })]);
      expect(results[0]).toMatchObject({ name: 'calculate', status: 'ok', output: { value: 3 } });
    });

    it('answers invalid for run_tool without a string name, or naming run_tool itself', async () => {
      const t = await setup();
      const { results } = await t.round([
        direct('run_tool', { args: {} }),
        rt('run_tool', { name: 'calculate', args: {} }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['invalid', 'invalid']);
      expect(results[0]?.error?.code).toBe('invalid');
      expect(t.ex.started).toHaveLength(0);
    });

    it('does not unwrap run_tool under claude-code, so step 2 refuses it', async () => {
      const t = await setup({ provider: 'claude-code' });
      const { results } = await t.round([rt('calculate', { expression: '1+1' })]);
      expect(results[0]?.status).toBe('refused');
      expect(t.ex.countOf('calculate')).toBe(0);
    });
  });

  describe('step 2: loaded-set check', () => {
    it('refuses a direct call of a deferred tool with a hint to use find_tools and run_tool', async () => {
      const t = await setup();
      const { results } = await t.round([direct('read_files', { paths: ['a'] }), direct('no_such_tool', {})]);
      for (const r of results) {
        expect(r.status).toBe('refused');
        expect(r.error?.message).toMatch(/find_tools/);
        expect(r.error?.message).toMatch(/run_tool/);
      }
      expect(t.ex.started).toHaveLength(0);
    });

    it('lets claude-code call every tool but run_tool directly', async () => {
      const t = await setup({ provider: 'claude-code', fetchAll: false });
      const first = await t.round([direct('calculate', { expression: '2+2' })]);
      expect(first.results[0]?.status).toBe('schema');
      const second = await t.round([direct('calculate', { expression: '2+2' })]);
      expect(second.results[0]).toMatchObject({ status: 'ok', output: { value: 4 } });
    });
  });

  describe('step 3: dedupe', () => {
    it('returns deduped for a repeat of a successful call in the same run, without running it', async () => {
      const t = await setup();
      const a = await t.round([rt('calculate', { expression: '1+1' }, 'first')]);
      const b = await t.round([rt('calculate', { expression: '1+1' })]);
      expect(b.results[0]).toMatchObject({
        status: 'deduped',
        dedupedFrom: 'first',
        dedupedFromRound: a.round,
        output: { value: 2 },
      });
      expect(t.ex.countOf('calculate')).toBe(1);
    });

    it("reads the run's dedupe map with the round's begin, not in a step of its own", async () => {
      const t = await setup();
      let reads = 0;
      const findDedupeMany = t.store.findDedupeMany.bind(t.store);
      t.store.findDedupeMany = (...args) => {
        reads++;
        return findDedupeMany(...args);
      };
      await t.round([rt('calculate', { expression: '1+1' }, 'a')]);
      const again = await t.round([
        rt('calculate', { expression: '1+1' }, 'b'),
        direct('read_files', { paths: ['x'] }),
      ]);
      expect(again.results[0]).toMatchObject({ status: 'deduped', dedupedFrom: 'a' });
      expect(reads).toBe(0);
    });

    it('keys on canonical args, so key order does not matter', async () => {
      const t = await setup();
      await t.round([rt('http_request', { url: 'http://x/', method: 'GET' })]);
      const b = await t.round([rt('http_request', { method: 'GET', url: 'http://x/' })]);
      expect(b.results[0]?.status).toBe('deduped');
    });

    it('is scoped to the run', async () => {
      const t = await setup();
      await t.round([rt('calculate', { expression: '1+1' })], 'run-a');
      const b = await t.round([rt('calculate', { expression: '1+1' })], 'run-b');
      expect(b.results[0]?.status).toBe('ok');
      expect(t.ex.countOf('calculate')).toBe(2);
    });

    it('runs two identical calls of one round once: the second is deduped from the first', async () => {
      const t = await setup();
      const { results } = await t.round([
        rt('calculate', { expression: '1+1' }, 'x1'),
        rt('calculate', { expression: '1+1' }, 'x2'),
      ]);
      expect(results[0]?.status).toBe('ok');
      expect(results[1]).toMatchObject({ status: 'deduped', dedupedFrom: 'x1', output: { value: 2 } });
      expect(t.ex.countOf('calculate')).toBe(1);
    });

    it("gives the second of two identical calls the first's status and error when the first fails", async () => {
      const ex = fakeTools().on('calculate', async () => {
        throw new Error('boom');
      });
      const t = await setup({ ex });
      const { results } = await t.round([rt('calculate', { expression: '1' }), rt('calculate', { expression: '1' })]);
      expect(results[0]).toMatchObject({ status: 'error', error: { code: 'handler_error', message: 'boom' } });
      expect(results[1]).toMatchObject({ status: 'error', error: { code: 'handler_error', message: 'boom' } });
      expect(ex.countOf('calculate')).toBe(1);
    });

    it('does not remember failed calls, so a repeat runs again', async () => {
      let n = 0;
      const ex = fakeTools().on('calculate', async () => {
        if (++n === 1) throw new Error('flaky');
        return { value: 1 };
      });
      const t = await setup({ ex });
      await t.round([rt('calculate', { expression: '1' })]);
      const b = await t.round([rt('calculate', { expression: '1' })]);
      expect(b.results[0]?.status).toBe('ok');
    });

    it('never dedupes run_command, edit_file or a non-GET http_request', async () => {
      const t = await setup({ autoApprove: 'all' });
      const calls = () => [
        rt('run_command', { command: 'true' }),
        rt('run_command', { command: 'true' }),
        rt('edit_file', { path: 'a.txt', content: 'x' }),
        rt('edit_file', { path: 'a.txt', content: 'x' }),
        rt('http_request', { url: 'http://x/', method: 'POST' }),
        rt('http_request', { url: 'http://x/', method: 'POST' }),
      ];
      const a = await t.round(calls());
      const b = await t.round(calls());
      expect([...a.results, ...b.results].every((r) => r.status === 'ok')).toBe(true);
      expect(t.ex.countOf('run_command')).toBe(4);
      expect(t.ex.countOf('edit_file')).toBe(4);
      expect(t.ex.countOf('http_request')).toBe(4);
    });
  });

  describe('step 4: deferred schemas', () => {
    it('returns the schema, with what is wrong with the args, and runs the call on the second try', async () => {
      const t = await setup({ fetchAll: false });
      const { results } = await t.round([rt('calculate', { expression: 5 })]);
      expect(results[0]?.status).toBe('schema');
      const out = results[0]?.output as {
        tool: { name: string; parameters: unknown };
        message: string;
        problems?: string[];
      };
      expect(out.tool.name).toBe('calculate');
      expect(out.message).toMatch(/again/);
      expect(out.problems?.join(' ')).toMatch(/expression/);
      const again = await t.round([rt('calculate', { expression: '1+1' })]);
      expect(again.results[0]?.status).toBe('ok');
    });

    it('lets later calls of the round see a schema fetched by an earlier one', async () => {
      const t = await setup({ fetchAll: false });
      const { results } = await t.round([
        rt('calculate', { expression: '1+1' }),
        rt('calculate', { expression: '2+2' }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['schema', 'ok']);
    });

    it('marks the schemas find_tools returns as fetched, for the same round too', async () => {
      const t = await setup({ fetchAll: false });
      const { results } = await t.round([
        direct('find_tools', { names: ['calculate'] }),
        rt('calculate', { expression: '1+1' }),
      ]);
      expect(results[0]?.status).toBe('ok');
      expect((results[0]!.output as { tools: Array<{ name: string }> }).tools.map((x) => x.name)).toEqual([
        'calculate',
      ]);
      expect(results[1]?.status).toBe('ok');
      const later = await t.round([rt('calculate', { expression: '3+3' })], 'r2');
      expect(later.results[0]?.status).toBe('ok');
    });

    it('fetches nothing for a find_tools that never ran: its run was cancelled while it waited behind a command', async () => {
      const ex = fakeTools().on(
        'run_command',
        (_a, _j, signal) =>
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))),
      );
      const t = await setup({ fetchAll: false, ex, autoApprove: ['run_command'] });
      await t.round([rt('run_command', { command: 'x' })]); // its schema
      const pending = t.round([
        rt('run_command', { command: 'sleep' }),
        direct('find_tools', { names: ['calculate'] }),
      ]);
      await until(async () => ex.inFlight === 1, { what: 'ex.inFlight === 1' });
      await t.engine.cancelRun(t.session, 'r1');
      const { results } = await pending;
      expect(results.map((r) => r.error?.code)).toEqual(['cancelled', 'cancelled']);
      expect((await t.engine.getSession(t.session))?.fetched).not.toContain('calculate');
      // The model never saw calculate's schema: its first call answers it.
      const next = await t.round([rt('calculate', { expression: '1+1' })], 'r2');
      expect(next.results[0]?.status).toBe('schema');
      expect(t.ex.countOf('calculate')).toBe(0);
    });
  });

  describe('step 5: existence', () => {
    it('answers unknown for a name with no definition, and never runs it', async () => {
      const t = await setup();
      const { results } = await t.round([rt('no_such_tool', {})]);
      expect(results[0]).toMatchObject({ status: 'unknown', error: { code: 'unknown' } });
    });

    it('leaves a tool nothing can run out of GET /v1/tools, the tools view and find_tools, and answers a call of it unknown at once', async () => {
      const t = await setup({ fetchAll: false });
      // The fake executor has no chat_history handler; calculate has one; ask_user is answered by a person.
      const names = (await t.engine.catalog()).map((c) => c.name);
      expect(names).toEqual(expect.arrayContaining(['calculate', 'ask_user', 'find_tools', 'run_tool']));
      expect(names).not.toContain('chat_history');
      const view = await t.engine.toolsFor(t.session);
      expect(view.context).not.toContain('chat_history');
      const found = await t.round([direct('find_tools', { names: ['chat_history', 'calculate'] })]);
      expect(found.results[0]?.output).toMatchObject({ tools: [{ name: 'calculate' }], missing: ['chat_history'] });
      const { results } = await t.round([rt('chat_history', { query: 'x' })]);
      expect(results[0]).toMatchObject({ status: 'unknown', error: { code: 'unknown' } });
    });

    it('parks a client tool for its client, never runs it, and ends it with the posted output', async () => {
      const t = await setup();
      const pick = { name: 'ui_pick', description: 'Pick.', parameters: { type: 'object' } };
      await t.engine.putSession(t.session, { provider: 'openai', clientTools: [pick] });
      t.ex.on('ui_pick', async () => ({ ran: 'on a worker' }));
      const round = t.round([direct('ui_pick', {}), rt('ui_pick', { again: true })]);
      for (const callId of ['c1', 'c2'].map((_, i) => i)) {
        const parked = await until(async () => (await t.engine.pendingInputs(t.session))[0], {
          what: 'the parked call',
        });
        expect(parked.kind).toBe('client');
        await t.engine.answerInput(t.session, parked.inputId, { output: { picked: callId } });
      }
      const { results } = await round;
      expect(results.map((r) => [r.status, r.output])).toEqual([
        ['ok', { picked: 0 }],
        ['ok', { picked: 1 }],
      ]);
      expect(t.ex.countOf('ui_pick')).toBe(0);
    });

    it('answers unknown for a defined tool with no registered handler', async () => {
      const t = await setup({ fetchAll: false });
      await t.round([rt('chat_history', {})]); // schema first
      const { results } = await t.round([rt('chat_history', {})]);
      expect(results[0]?.status).toBe('unknown');
    });
  });

  describe('step 6: validation', () => {
    it('answers invalid with errors in words the model can act on', async () => {
      const t = await setup();
      const { results } = await t.round([rt('calculate', { expression: 5 }), rt('calculate', {})]);
      expect(results[0]).toMatchObject({ status: 'invalid', error: { code: 'invalid' } });
      expect(results[0]?.error?.message).toMatch(/expression must be of type string/);
      expect(results[1]?.error?.message).toMatch(/missing the required property "expression"/);
      expect(t.ex.countOf('calculate')).toBe(0);
    });

    it('validates before the confirm gate, so nobody is asked to approve a call that cannot run', async () => {
      const t = await setup();
      const { results } = await t.round([rt('run_command', { command: 7 })]);
      expect(results[0]?.status).toBe('invalid');
      expect(t.events.some((e) => e.name === 'confirm.requested')).toBe(false);
    });
  });

  describe('step 7: result cache', () => {
    it('returns cached for a GET seen in another run within 30 minutes, without running it', async () => {
      const t = await setup();
      await t.round([rt('http_request', { url: 'http://x/a' })], 'run-a');
      const b = await t.round([rt('http_request', { url: 'http://x/a' })], 'run-b');
      expect(b.results[0]).toMatchObject({ status: 'cached', output: { body: 'body of http://x/a' } });
      expect(t.ex.countOf('http_request')).toBe(1);
    });

    it('expires entries after 30 minutes', async () => {
      const t = await setup();
      await t.round([rt('fetch_page', { url: 'http://x/p' })], 'run-a');
      t.clock.now += RESULT_CACHE_TTL_MS + 1;
      const b = await t.round([rt('fetch_page', { url: 'http://x/p' })], 'run-b');
      expect(b.results[0]?.status).toBe('ok');
    });

    it('never caches requests carrying credentials', async () => {
      const t = await setup();
      const creds = [
        { url: 'http://x/c', headers: { Authorization: 'Bearer 1' } },
        { url: 'http://x/c', headers: { 'X-Auth-Token': '1' } },
        { url: 'http://x/c', headers: { Cookie: 'a=1' } },
        { url: 'http://u:p@x/c' },
      ];
      for (const args of creds) await t.round([rt('http_request', args)], 'run-a');
      for (const args of creds) {
        const b = await t.round([rt('http_request', args)], `run-${++seq}`);
        expect(b.results[0]?.status).toBe('ok');
      }
    });

    it('never shares the cache between tenants', async () => {
      const t = await setup({ tenant: 'acme' });
      await t.round([rt('fetch_page', { url: 'http://x/t' })], 'run-a');
      await t.engine.putSession('other', { provider: 'openai', tenant: 'globex' });
      await t.engine.submitRound({ session: 'other', run: 'setup', calls: [direct('find_tools', {})] });
      const b = await t.engine.submitRound({
        session: 'other',
        run: 'r',
        calls: [rt('fetch_page', { url: 'http://x/t' })],
      });
      expect(b.results[0]?.status).toBe('ok');
    });

    it('does not cache non-GET requests', async () => {
      const t = await setup({ autoApprove: 'all' });
      await t.round([rt('http_request', { url: 'http://x/p', method: 'PUT' })], 'run-a');
      const b = await t.round([rt('http_request', { url: 'http://x/p', method: 'PUT' })], 'run-b');
      expect(b.results[0]?.status).toBe('ok');
    });
  });

  describe('step 8: confirm gate', () => {
    it('asks all confirmations of a round at once and runs nothing until all are answered', async () => {
      const t = await setup();
      const pending = t.round([
        rt('calculate', { expression: '1' }),
        rt('run_command', { command: 'a' }),
        rt('edit_file', { path: 'f', content: 'x' }),
      ]);
      await until(async () => (await t.engine.pendingConfirmations(t.session)).length === 2, {
        what: '(await t.engine.pendingConfirmations(t.session)).length === 2',
      });
      const asked = t.events.filter((e) => e.name === 'confirm.requested');
      expect(asked).toHaveLength(2);
      expect(new Set(asked.map((e) => e.data.confirmationId)).size).toBe(2);
      const [a, b] = await t.engine.pendingConfirmations(t.session);
      await t.engine.answerConfirmation(t.session, a!.confirmationId, { approve: true, remember: false });
      await sleep(30);
      expect(t.ex.started).toHaveLength(0);
      await t.engine.answerConfirmation(t.session, b!.confirmationId, { approve: false, remember: false });
      const { results } = await pending;
      expect(results.map((r) => r.status)).toEqual(['ok', 'ok', 'denied']);
      expect(results[2]?.error?.code).toBe('denied');
      expect(t.ex.countOf('edit_file')).toBe(0);
    });

    it('denies a call nobody answers before the confirm timeout', async () => {
      const t = await setup({ confirmTimeoutMs: 50 });
      const { results } = await t.round([rt('run_command', { command: 'a' })]);
      expect(results[0]).toMatchObject({ status: 'denied', error: { code: 'denied' } });
      expect(t.ex.countOf('run_command')).toBe(0);
    });

    it('adds the tool to auto-approve when approved with remember, and approves its other pending calls', async () => {
      const t = await setup();
      const pending = t.round([rt('run_command', { command: 'a' }), rt('run_command', { command: 'b' })]);
      await until(async () => (await t.engine.pendingConfirmations(t.session)).length === 2, {
        what: '(await t.engine.pendingConfirmations(t.session)).length === 2',
      });
      const [a] = await t.engine.pendingConfirmations(t.session);
      await t.engine.answerConfirmation(t.session, a!.callId, { approve: true, remember: true });
      expect((await pending).results.map((r) => r.status)).toEqual(['ok', 'ok']);
      const next = await t.round([rt('run_command', { command: 'c' })]);
      expect(next.results[0]?.status).toBe('ok');
      expect(t.events.filter((e) => e.name === 'confirm.requested')).toHaveLength(2);
    });

    it('asks only for non-GET http_request, and never for auto-approved tools', async () => {
      const t = await setup({ autoApprove: ['run_command'] });
      const { results } = await t.round([
        rt('http_request', { url: 'http://x/g' }),
        rt('run_command', { command: 'x' }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['ok', 'ok']);
      expect(t.events.some((e) => e.name === 'confirm.requested')).toBe(false);
    });

    it('gives each confirmation an id unique across rounds', async () => {
      const t = await setup({ confirmTimeoutMs: 30 });
      await t.round([rt('run_command', { command: 'a' })]);
      await t.round([rt('run_command', { command: 'a' })]);
      const ids = t.events.filter((e) => e.name === 'confirm.requested').map((e) => e.data.confirmationId);
      expect(ids).toHaveLength(2);
      expect(ids[0]).not.toBe(ids[1]);
    });

    it('rejects an answer to nothing pending, and a bare callId shared by several confirmations', async () => {
      const t = await setup();
      await expect(
        t.engine.answerConfirmation(t.session, 'nope', { approve: true, remember: false }),
      ).rejects.toMatchObject({
        code: 'confirmation_not_found',
      });
      const p1 = t.round([rt('run_command', { command: 'a' }, 'same')], 'run-1');
      const p2 = t.round([rt('run_command', { command: 'b' }, 'same')], 'run-2');
      await until(async () => (await t.engine.pendingConfirmations(t.session)).length === 2, {
        what: '(await t.engine.pendingConfirmations(t.session)).length === 2',
      });
      await expect(
        t.engine.answerConfirmation(t.session, 'same', { approve: true, remember: false }),
      ).rejects.toBeInstanceOf(RequestError);
      for (const c of await t.engine.pendingConfirmations(t.session))
        await t.engine.answerConfirmation(t.session, c.confirmationId, { approve: false, remember: false });
      await Promise.all([p1, p2]);
    });
  });
});

describe('pass 2: execute', () => {
  it('raises no MaxListenersExceededWarning for a round of 100 concurrent calls of one run', async () => {
    const ex = fakeTools();
    ex.on('calculate', async (a, _job, signal) => {
      const onAbort = () => {};
      signal.addEventListener('abort', onAbort);
      await sleep(2);
      signal.removeEventListener('abort', onAbort);
      return { value: Number(a.expression) };
    });
    const t = await setup({ ex });
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const calls = Array.from({ length: 100 }, (_, i) => rt('calculate', { expression: String(i) }));
      const { results } = await t.round(calls);
      expect(results.every((r) => r.status === 'ok')).toBe(true);
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('keeps at most MAX_CONCURRENT_TOOLS (5) concurrent calls of a run in flight', async () => {
    const ex = fakeTools().on('http_request', async () => {
      await sleep(20);
      return { status: 200 };
    });
    const t = await setup({ ex });
    const calls = Array.from({ length: 12 }, (_, i) => rt('http_request', { url: `http://x/${i}` }));
    const { results } = await t.round(calls);
    expect(results.every((r) => r.status === 'ok')).toBe(true);
    expect(ex.maxInFlight).toBe(5);
  });

  it('runs a serial call alone, after the calls before it and before the calls after it', async () => {
    const ex = fakeTools();
    for (const n of ['http_request', 'run_command']) {
      const inner = ex.handlers.get(n)!;
      ex.on(n, async (a, job, s) => {
        await sleep(10);
        return inner(a, job, s);
      });
    }
    const t = await setup({ ex, autoApprove: 'all' });
    await t.round([
      rt('http_request', { url: 'http://x/1' }),
      rt('http_request', { url: 'http://x/2' }),
      rt('run_command', { command: 'x' }),
      rt('http_request', { url: 'http://x/3' }),
    ]);
    const cmd = ex.spans.find((s) => s.job.name === 'run_command')!;
    for (const s of ex.spans.filter((x) => x !== cmd)) expect(s.end < cmd.start || s.start > cmd.end).toBe(true);
    expect(
      ex.spans
        .filter((s) => s.end < cmd.start)
        .map((s) => s.job.args.url)
        .sort(),
    ).toEqual(['http://x/1', 'http://x/2']);
  });

  it('never lets one failed call cancel its siblings', async () => {
    const ex = fakeTools().on('http_request', async (a) => {
      if (a.url === 'http://x/bad') throw new ToolError('handler_error', 'connection refused');
      await sleep(20);
      return { status: 200 };
    });
    const t = await setup({ ex });
    const { results } = await t.round([
      rt('http_request', { url: 'http://x/bad' }),
      rt('http_request', { url: 'http://x/ok' }),
    ]);
    expect(results[0]).toMatchObject({
      status: 'error',
      error: { code: 'handler_error', message: 'connection refused' },
    });
    expect(results[1]?.status).toBe('ok');
  });

  it('cancels a run: running calls get the abort signal, queued ones never start', async () => {
    const ex = fakeTools().on(
      'http_request',
      (_a, _j, signal) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))),
    );
    const t = await setup({ ex });
    const pending = t.round(Array.from({ length: 7 }, (_, i) => rt('http_request', { url: `http://x/${i}` })));
    await until(async () => ex.inFlight === 5, { what: 'ex.inFlight === 5' });
    const n = await t.engine.cancelRun(t.session, 'r1');
    const { results } = await pending;
    expect(n).toBe(7);
    expect(results.every((r) => r.status === 'error' && r.error?.code === 'cancelled')).toBe(true);
    expect(ex.started).toHaveLength(5);
  });

  it('cancels calls awaiting approval', async () => {
    const t = await setup();
    const pending = t.round([rt('run_command', { command: 'x' })]);
    await until(async () => (await t.engine.pendingConfirmations(t.session)).length === 1, {
      what: '(await t.engine.pendingConfirmations(t.session)).length === 1',
    });
    expect(await t.engine.cancelRun(t.session, 'r1')).toBe(1);
    expect((await pending).results[0]).toMatchObject({ status: 'error', error: { code: 'cancelled' } });
    expect(await t.engine.pendingConfirmations(t.session)).toHaveLength(0);
  });
});

describe('pass 3: commit', () => {
  it('records every status in the session history and in the tool history, in call order', async () => {
    const t = await setup();
    const { results } = await t.round([
      rt('calculate', { expression: '1' }),
      direct('nope'),
      rt('calculate', { expression: 1 }),
    ]);
    const h = await t.engine.history(t.session);
    const mine = h.filter((e) => e.run === 'r1');
    expect(mine.map((e) => [e.id, e.status])).toEqual(results.map((r) => [r.id, r.status]));
    expect(mine.every((e) => typeof e.at === 'string')).toBe(true);
    expect((await t.engine.history(t.session, 'calculate')).filter((e) => e.run === 'r1')).toHaveLength(2);
  });

  it('emits round.started, tool.result in commit order, then round.completed', async () => {
    const t = await setup();
    t.events.length = 0;
    const { round, results } = await t.round([
      rt('calculate', { expression: '1' }),
      rt('calculate', { expression: '2' }),
    ]);
    expect(t.events.map((e) => e.name)).toEqual(['round.started', 'tool.result', 'tool.result', 'round.completed']);
    expect(t.events.slice(1, 3).map((e) => e.data.id)).toEqual(results.map((r) => r.id));
    expect(t.events.every((e) => e.data.round === round && e.data.run === 'r1')).toBe(true);
  });

  it('lets a successful edit_file remove the read_files entries covering the path it touched', async () => {
    const t = await setup({ autoApprove: 'all' });
    await t.round([rt('read_files', { paths: ['a.txt'] }), rt('read_files', { paths: ['b.txt'] })]);
    await t.round([rt('edit_file', { path: './x/../a.txt', content: 'new' })]);
    const after = await t.round([rt('read_files', { paths: ['a.txt'] }), rt('read_files', { paths: ['b.txt'] })]);
    expect(after.results.map((r) => r.status)).toEqual(['ok', 'deduped']);
  });

  it('resolves symlinks inside the workspace: an edit through a link drops reads of its target, and the reverse', async () => {
    const t = await setup({ autoApprove: 'all' });
    const ws = (await t.engine.getSession(t.session))?.workspace as string;
    mkdirSync(path.join(ws, 'src'));
    writeFileSync(path.join(ws, 'src', 'a.txt'), 'a');
    writeFileSync(path.join(ws, 'b.txt'), 'b');
    symlinkSync(path.join('src', 'a.txt'), path.join(ws, 'link.txt'));
    symlinkSync('src', path.join(ws, 'dir'));
    const reads = [rt('read_files', { paths: ['src/a.txt'] }), rt('read_files', { paths: ['b.txt'] })];
    await t.round(reads);
    await t.round([rt('edit_file', { path: 'link.txt', content: 'new' })]);
    const after = await t.round([rt('read_files', { paths: ['src/a.txt'] }), rt('read_files', { paths: ['b.txt'] })]);
    expect(after.results.map((r) => r.status)).toEqual(['ok', 'deduped']);
    // A read through a linked directory, then an edit of the target itself.
    await t.round([rt('read_files', { paths: ['dir/a.txt'] })]);
    await t.round([rt('edit_file', { path: 'src/a.txt', content: 'newer' })]);
    expect((await t.round([rt('read_files', { paths: ['dir/a.txt'] })])).results[0]?.status).toBe('ok');
  });

  it('drops find_files entries when edit_file creates a file, and keeps them when it does not', async () => {
    const t = await setup({ autoApprove: 'all' });
    await t.round([rt('find_files', { pattern: '*' })]);
    await t.round([rt('edit_file', { path: 'a.txt', content: 'x' })]);
    expect((await t.round([rt('find_files', { pattern: '*' })])).results[0]?.status).toBe('deduped');
    await t.round([rt('edit_file', { path: 'new.txt', content: 'x' })]);
    expect((await t.round([rt('find_files', { pattern: '*' })])).results[0]?.status).toBe('ok');
  });

  it('lets a successful run_command remove every read_files and find_files entry of the run', async () => {
    const t = await setup({ autoApprove: 'all' });
    await t.round([
      rt('read_files', { paths: ['a.txt'] }),
      rt('find_files', { pattern: '*' }),
      rt('calculate', { expression: '1' }),
    ]);
    await t.round([rt('run_command', { command: 'touch z' })]);
    const after = await t.round([
      rt('read_files', { paths: ['a.txt'] }),
      rt('find_files', { pattern: '*' }),
      rt('calculate', { expression: '1' }),
    ]);
    expect(after.results.map((r) => r.status)).toEqual(['ok', 'ok', 'deduped']);
  });

  it('does not dedupe a read that follows an edit of the same path in one round', async () => {
    const t = await setup({ autoApprove: 'all' });
    await t.round([rt('read_files', { paths: ['a.txt'] })]);
    const { results } = await t.round([
      rt('read_files', { paths: ['a.txt'] }),
      rt('edit_file', { path: 'a.txt', content: 'x' }),
      rt('read_files', { paths: ['a.txt'] }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['deduped', 'ok', 'ok']);
  });

  it('is idempotent: committing a round twice records it once', async () => {
    const t = await setup();
    const { round, results } = await t.round([rt('calculate', { expression: '1' })]);
    const before = (await t.engine.history(t.session)).length;
    await commitRound({
      store: t.store,
      events: t.engine.events,
      session: t.session,
      tenant: 'default',
      run: 'r1',
      round,
      planned: [],
      results,
    });
    const planned = [
      {
        call: { index: 0, id: results[0]!.id, name: 'calculate', args: {} },
        name: 'calculate',
        args: {},
        spec: undefined,
        key: 'k',
        dedupable: true,
        cacheable: false,
        paths: undefined,
        decision: { kind: 'run' as const, needsConfirm: false },
      },
    ];
    await commitRound({
      store: t.store,
      events: t.engine.events,
      session: t.session,
      tenant: 'default',
      run: 'r1',
      round,
      planned,
      results,
    });
    expect((await t.engine.history(t.session)).length).toBe(before);
  });
});

describe('rounds', () => {
  it('answers a retry with the same Idempotency-Key with the first round, without running its calls again', async () => {
    const t = await setup();
    const calls = [rt('calculate', { expression: '1+1' }, 'k1')];
    const [a, b] = await Promise.all([t.round(calls, 'r1', 'key-1'), t.round(calls, 'r1', 'key-1')]);
    expect(b).toEqual(a);
    expect(t.ex.countOf('calculate')).toBe(1);
    await expect(t.round([rt('calculate', { expression: '2' }, 'k1')], 'r1', 'key-1')).rejects.toMatchObject({
      code: 'idempotency_conflict',
    });
  });

  it('compares a retry under the same Idempotency-Key after normalising the calls’ shape (API.md), not as sent', async () => {
    const t = await setup();
    const native = { id: 'k1', name: 'run_tool', args: { name: 'calculate', args: { expression: '1+1' } } };
    const first = await t.round([native], 'r1', 'key-shape');
    // The same call: args as a JSON string, keys in another order, then in the OpenAI and Anthropic shapes.
    const retries = [
      { id: 'k1', name: 'run_tool', args: JSON.stringify({ args: { expression: '1+1' }, name: 'calculate' }) },
      { id: 'k1', type: 'function', function: { name: 'run_tool', arguments: JSON.stringify(native.args) } },
      { type: 'tool_use', id: 'k1', name: 'run_tool', input: native.args },
    ];
    for (const call of retries) expect(await t.round([call], 'r1', 'key-shape')).toEqual(first);
    expect(t.ex.countOf('calculate')).toBe(1);
    // Another call under the key is still a conflict.
    const other = {
      id: 'k1',
      name: 'run_tool',
      args: JSON.stringify({ name: 'calculate', args: { expression: '1+2' } }),
    };
    await expect(t.round([other], 'r1', 'key-shape')).rejects.toMatchObject({ code: 'idempotency_conflict' });
  });

  it('answers 404-class for an unknown session', async () => {
    const t = await setup();
    await expect(t.engine.submitRound({ session: 'missing', run: 'r', calls: [] })).rejects.toMatchObject({
      code: 'session_not_found',
    });
  });
});

describe('bad input', () => {
  it('gives each malformed call its own status, completes the round, and keeps what was recorded', async () => {
    const t = await setup();
    await t.round([rt('calculate', { expression: '1' })]);
    const before = await t.engine.history(t.session);
    let deep: unknown = 'x';
    for (let i = 0; i < 100; i++) deep = { d: deep };
    const { results } = await t.round([
      { id: 'a1', name: 'run_tool', args: '{not json' },
      { id: 'a2', name: 'run_tool', args: '[1,2]' },
      { id: 'a3', name: 'run_tool', args: { name: 'calculate', args: 'nope' } },
      rt('calculate', { expression: 'x'.repeat(300_000) }, 'a4'),
      rt('calculate', deep, 'a5'),
      {
        id: 'a6',
        name: 'run_tool',
        args: JSON.parse('{"name":"calculate","args":{"__proto__":{"polluted":1},"expression":"1"}}'),
      },
      rt('run_tool', { name: 'run_tool', args: {} }, 'a7'),
      { id: 'a8', args: {} },
      rt('calculate', { expression: '2' }, 'a9'),
    ]);
    expect(results.map((r) => r.status)).toEqual([
      'invalid',
      'invalid',
      'invalid',
      'invalid',
      'invalid',
      'invalid',
      'invalid',
      'invalid',
      'ok',
    ]);
    expect(results[7]?.error?.message).toMatch(/no tool name/);
    expect(results[0]?.error?.message).toMatch(/not valid JSON/);
    expect(results[3]?.error?.message).toMatch(/limit/);
    expect(results[4]?.error?.message).toMatch(/nested/);
    expect(results[5]?.error?.message).toMatch(/__proto__/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const after = await t.engine.history(t.session);
    expect(after.slice(0, before.length)).toEqual(before);
  });
});
