import { type CallResult, callKey, SHIPPED_DEFINITIONS, type ToolDefinition } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import type { CachedResult, DedupeEntry, KnownKey, NormalCall, PlannedCall } from '../model.js';
import { Catalog, sessionSpecs } from './catalog.js';
import { normalizeCall } from './normalize-call.js';
import { lookupKeys, type PreflightInput, preflight } from './preflight.js';
import { initiallyFetched, loadedSet } from './session-view.js';

/** Tools the worker ships handlers for (find_tools and run_tool are answered by the coordinator). */
const HANDLED = SHIPPED_DEFINITIONS.map((d) => d.name).filter((n) => n !== 'find_tools' && n !== 'run_tool');

const payTool: ToolDefinition = {
  name: 'api_pay',
  description: 'Pay an invoice.',
  parameters: { type: 'object', properties: { invoice: { type: 'string' } }, required: ['invoice'] },
  confirm: true,
};
const pickTool: ToolDefinition = {
  name: 'ui_pick',
  description: 'Pick a file in the UI.',
  parameters: { type: 'object' },
};

interface Options {
  provider?: string;
  /** Schemas already shown: every tool (default), or the session's initial set. */
  fetched?: 'all' | 'initial' | string[];
  runnable?: string[];
  noWorkers?: boolean;
  autoApprove?: string[] | 'all';
  /** The run's dedupe map. */
  dedupe?: DedupeEntry[];
  /** The tenant's live result cache. */
  cached?: Array<{ key: string } & CachedResult>;
  knownKeys?: Map<NormalCall, KnownKey>;
}

/** A PreflightInput over in-memory maps, recording which keys pass 1 looked up. */
function sessionInput(opts: Options = {}): PreflightInput & { dedupeAsked: string[]; cacheAsked: string[] } {
  const catalog = new Catalog();
  catalog.register(payTool);
  const provider = opts.provider ?? 'openai';
  const clientTools = [pickTool];
  const specs = sessionSpecs(catalog, clientTools);
  const fetched =
    opts.fetched === 'initial'
      ? initiallyFetched(provider, clientTools)
      : opts.fetched === undefined || opts.fetched === 'all'
        ? [...specs.keys()]
        : opts.fetched;
  const dedupe = new Map((opts.dedupe ?? []).map((e) => [e.key, e]));
  const cached = new Map((opts.cached ?? []).map(({ key, ...c }) => [key, c]));
  const dedupeAsked: string[] = [];
  const cacheAsked: string[] = [];
  const pick = <V>(from: ReadonlyMap<string, V>, keys: readonly string[]) =>
    new Map(keys.flatMap((k) => (from.has(k) ? [[k, from.get(k) as V] as const] : [])));
  return {
    provider,
    loaded: loadedSet(provider, specs, clientTools),
    fetched: new Set(fetched),
    specs,
    runnable: new Set(opts.runnable ?? [...HANDLED, 'api_pay']),
    ...(opts.noWorkers ? { noWorkers: true } : {}),
    autoApprove: opts.autoApprove ?? [],
    ...(opts.knownKeys ? { knownKeys: opts.knownKeys } : {}),
    dedupeAsked,
    cacheAsked,
    async findDedupe(keys) {
      dedupeAsked.push(...keys);
      return pick(dedupe, keys);
    },
    async findCached(keys) {
      cacheAsked.push(...keys);
      return pick(cached, keys);
    },
  };
}

/** A round of raw calls (any API.md shape), normalised as the HTTP edge does. */
const round = (...raw: unknown[]) => raw.map((c, i) => normalizeCall(c, i));
const direct = (id: string, name: string, args: unknown = {}) => ({ id, name, args });
const viaRunTool = (id: string, name: string, args: unknown = {}) => ({ id, name: 'run_tool', args: { name, args } });

const entry = (name: string, args: Record<string, unknown>, output: unknown, paths?: string[]): DedupeEntry => ({
  key: callKey(name, args),
  tool: name,
  callId: 'earlier',
  round: 'r0',
  output,
  ...(paths ? { paths } : {}),
});

async function plan(opts: Options, ...raw: unknown[]): Promise<PlannedCall[]> {
  return preflight(round(...raw), sessionInput(opts));
}

function resultOf(p: PlannedCall | undefined): CallResult {
  if (p?.decision.kind !== 'done')
    throw new Error(`expected a call ended in pass 1, got ${JSON.stringify(p?.decision)}`);
  return p.decision.result;
}
const statusOf = (p: PlannedCall | undefined) =>
  p?.decision.kind === 'done' ? p.decision.result.status : p?.decision.kind;

const readA = { paths: ['a.txt'] };
const contentsOfA = { files: [{ path: 'a.txt', content: 'old' }] };

describe('preflight', () => {
  it('answers one decision per call, in call order', async () => {
    const planned = await plan(
      {},
      viaRunTool('c1', 'calculate', { expression: '1' }),
      direct('c2', 'nowhere'),
      viaRunTool('c3', 'calculate', { expression: '2' }),
    );
    expect(planned.map((p) => p.call.id)).toEqual(['c1', 'c2', 'c3']);
    expect(planned.map(statusOf)).toEqual(['run', 'refused', 'run']);
  });

  it('gives no decisions for an empty round', async () => {
    expect(await plan({})).toEqual([]);
  });

  describe('when an item is not a function call', () => {
    it('answers invalid for a custom tool call, naming it and what it is, and runs nothing', async () => {
      const [p] = await plan({}, { id: 'call_c', type: 'custom', custom: { name: 'calculate', input: '6*7' } });
      expect(resultOf(p)).toMatchObject({
        id: 'call_c',
        name: 'calculate',
        status: 'invalid',
        error: { code: 'invalid' },
      });
      expect(resultOf(p).error?.message).toBe(
        '"calculate" was called as an OpenAI custom tool call (type "custom"), not as a function: nothing was run. Only function tools run here; call one with a JSON object of arguments.',
      );
    });

    it('answers invalid for a text block or a reasoning item, saying what it is, beside the calls that run', async () => {
      const planned = await plan(
        {},
        { type: 'text', text: 'Let me compute.' },
        viaRunTool('c1', 'calculate', { expression: '1' }),
        { type: 'reasoning', id: 'rs_1', summary: [] },
      );
      expect(planned.map(statusOf)).toEqual(['invalid', 'run', 'invalid']);
      expect(resultOf(planned[0]).error?.message).toBe(
        'This is a text block (type "text"), not a function call: nothing was run.',
      );
      expect(resultOf(planned[2]).error?.message).toMatch(/^This is a reasoning item \(type "reasoning"\)/);
    });
  });

  describe('step 1: unwrapping run_tool', () => {
    it('turns run_tool({name, args}) into a call of name with args', async () => {
      const [p] = await plan({}, viaRunTool('c1', 'calculate', { expression: '1+2' }));
      expect(p).toMatchObject({
        name: 'calculate',
        args: { expression: '1+2' },
        key: callKey('calculate', { expression: '1+2' }),
      });
      expect(p?.decision).toEqual({ kind: 'run', needsConfirm: false });
    });

    it('reads inner args given as a JSON string, and missing inner args as none', async () => {
      const [p1, p2] = await plan({}, viaRunTool('c1', 'calculate', '{"expression":"4"}'), {
        id: 'c2',
        name: 'run_tool',
        args: { name: 'find_tools' },
      });
      expect(p1).toMatchObject({ name: 'calculate', args: { expression: '4' } });
      expect(p2).toMatchObject({ name: 'find_tools', args: {} });
    });

    for (const [what, args] of [
      ['no name', { args: {} }],
      ['a name that is not a string', { name: 7, args: {} }],
      ['an empty name', { name: '', args: {} }],
    ] as const) {
      it(`answers invalid for a run_tool with ${what}`, async () => {
        const r = resultOf((await plan({}, direct('c1', 'run_tool', args)))[0]);
        expect(r).toMatchObject({ name: 'run_tool', status: 'invalid', error: { code: 'invalid' } });
        expect(r.error?.message).toMatch(/run_tool needs a string "name"/);
      });
    }

    it('answers invalid for a run_tool naming run_tool itself', async () => {
      const r = resultOf((await plan({}, viaRunTool('c1', 'run_tool', { name: 'calculate', args: {} })))[0]);
      expect(r).toMatchObject({ name: 'run_tool', status: 'invalid' });
      expect(r.error?.message).toMatch(/run_tool cannot call run_tool/);
    });

    it('answers invalid, under the inner name, when the inner args are not an object', async () => {
      const [p1, p2] = await plan({}, viaRunTool('c1', 'calculate', [1]), viaRunTool('c2', 'calculate', '{oops'));
      expect(resultOf(p1)).toMatchObject({ name: 'calculate', status: 'invalid' });
      expect(resultOf(p1).error?.message).toBe('calculate: args must be a JSON object, got an array');
      expect(resultOf(p2).error?.message).toMatch(/^calculate: args are not valid JSON/);
    });

    it("answers invalid when run_tool's own args cannot be read", async () => {
      const r = resultOf((await plan({}, direct('c1', 'run_tool', '{"name": ')))[0]);
      expect(r).toMatchObject({ name: 'run_tool', status: 'invalid' });
      expect(r.error?.message).toMatch(/^run_tool: args are not valid JSON/);
    });

    it('skips the loaded-set check for the tool it names', async () => {
      const [p] = await plan({}, viaRunTool('c1', 'read_files', readA));
      expect(statusOf(p)).toBe('run');
    });

    describe('when the provider is claude-code', () => {
      it('does not unwrap run_tool, so step 2 refuses it', async () => {
        const r = resultOf(
          (await plan({ provider: 'claude-code' }, viaRunTool('c1', 'calculate', { expression: '1' })))[0],
        );
        expect(r).toMatchObject({ name: 'run_tool', status: 'refused', error: { code: 'refused' } });
      });
    });
  });

  describe('step 2: the loaded-set check', () => {
    it('refuses a direct call of a tool not in the loaded set, hinting at find_tools then run_tool', async () => {
      const r = resultOf((await plan({}, direct('c1', 'read_files', readA)))[0]);
      expect(r).toMatchObject({ id: 'c1', name: 'read_files', status: 'refused', error: { code: 'refused' } });
      expect(r.error?.message).toContain('find_tools({"names": ["read_files"]})');
      expect(r.error?.message).toContain('run_tool({"name": "read_files", "args": {...}})');
    });

    it('refuses names that exist nowhere, too', async () => {
      const r = resultOf((await plan({}, direct('c1', 'teleport')))[0]);
      expect(r).toMatchObject({ name: 'teleport', status: 'refused' });
      expect(r.error?.message).toContain('find_tools');
    });

    it('lets direct calls of loaded tools go on: find_tools and client tools', async () => {
      const planned = await plan({}, direct('c1', 'find_tools', { names: ['calculate'] }), direct('c2', 'ui_pick'));
      expect(statusOf(planned[0])).toBe('run');
      expect(statusOf(planned[1])).not.toBe('refused');
    });

    it('refuses before looking at the args, so bad args of an unloaded tool still get the hint', async () => {
      const r = resultOf((await plan({}, direct('c1', 'read_files', '{broken')))[0]);
      expect(r.status).toBe('refused');
    });

    it('refuses before dedupe, so a repeat of a successful call made directly is refused, not deduped', async () => {
      const [p] = await plan({ dedupe: [entry('read_files', readA, contentsOfA)] }, direct('c1', 'read_files', readA));
      expect(statusOf(p)).toBe('refused');
    });

    it('answers invalid for a call with no tool name, before the loaded-set check', async () => {
      const r = resultOf((await plan({}, { id: 'c1', args: {} }))[0]);
      expect(r).toMatchObject({ name: '', status: 'invalid', error: { code: 'invalid' } });
      expect(r.error?.message).toMatch(/no tool name/);
    });

    it('answers invalid for a loaded call whose args break the shape limits', async () => {
      let deep: unknown = 1;
      for (let i = 0; i < 40; i++) deep = { a: deep };
      const planned = await plan(
        {},
        direct('c1', 'find_tools', deep),
        viaRunTool('c2', 'calculate', deep),
        viaRunTool('c3', 'calculate', JSON.stringify(deep)),
      );
      expect(resultOf(planned[0]).error?.message).toBe('find_tools: args are nested deeper than 32 levels');
      // run_tool's own args hold the inner ones, so they are over the limit first.
      expect(resultOf(planned[1])).toMatchObject({ name: 'run_tool', status: 'invalid' });
      expect(resultOf(planned[1]).error?.message).toBe('run_tool: args are nested deeper than 32 levels');
      expect(resultOf(planned[2])).toMatchObject({ name: 'calculate', status: 'invalid' });
      expect(resultOf(planned[2]).error?.message).toBe('calculate: args are nested deeper than 32 levels');
    });

    describe('when the provider is claude-code', () => {
      it('lets direct calls of every tool but run_tool go on', async () => {
        const [p] = await plan({ provider: 'claude-code' }, direct('c1', 'read_files', readA));
        expect(statusOf(p)).toBe('run');
      });

      it('refuses unknown names without advising run_tool, which is not loaded', async () => {
        const r = resultOf((await plan({ provider: 'claude-code' }, direct('c1', 'teleport')))[0]);
        expect(r.status).toBe('refused');
        expect(r.error?.message).toContain('find_tools');
        expect(r.error?.message).not.toContain('run_tool');
      });
    });
  });

  describe('step 3: dedupe', () => {
    it('returns deduped for a repeat of a successful call in the same run', async () => {
      const [p] = await plan(
        { dedupe: [entry('read_files', readA, contentsOfA)] },
        viaRunTool('c1', 'read_files', readA),
      );
      expect(resultOf(p)).toEqual({
        id: 'c1',
        name: 'read_files',
        status: 'deduped',
        output: contentsOfA,
        dedupedFrom: 'earlier',
        dedupedFromRound: 'r0',
        durationMs: 0,
      });
    });

    it('matches args whatever the order of their keys', async () => {
      const args = { url: 'https://x.test/', method: 'GET' };
      const [p] = await plan(
        { dedupe: [entry('http_request', args, { status: 200 })] },
        viaRunTool('c1', 'http_request', { method: 'GET', url: 'https://x.test/' }),
      );
      expect(statusOf(p)).toBe('deduped');
    });

    it('does not dedupe a call whose args differ', async () => {
      const [p] = await plan(
        { dedupe: [entry('read_files', readA, contentsOfA)] },
        viaRunTool('c1', 'read_files', { paths: ['b.txt'] }),
      );
      expect(statusOf(p)).toBe('run');
    });

    it('dedupes before the deferred-schema step: a deduped call does not fetch the schema', async () => {
      const input = sessionInput({ fetched: 'initial', dedupe: [entry('read_files', readA, contentsOfA)] });
      const [p] = await preflight(round(viaRunTool('c1', 'read_files', readA)), input);
      expect(statusOf(p)).toBe('deduped');
      expect(input.fetched.has('read_files')).toBe(false);
    });

    for (const [name, args] of [
      ['run_command', { command: 'ls' }],
      ['edit_file', { path: 'a.txt', content: 'x' }],
      ['http_request', { url: 'https://x.test/', method: 'POST' }],
    ] as const) {
      it(`never dedupes ${name === 'http_request' ? 'a POST http_request' : name}, even with a successful repeat stored`, async () => {
        const input = sessionInput({ dedupe: [entry(name, args, { stale: true })] });
        const planned = await preflight(round(viaRunTool('c1', name, args), viaRunTool('c2', name, args)), input);
        expect(planned.map((p) => p.decision.kind)).toEqual(['run', 'run']);
        expect(input.dedupeAsked).not.toContain(callKey(name, args));
      });
    }

    describe('when a call repeats an earlier call of the same round', () => {
      it('follows the first, which runs alone', async () => {
        const planned = await plan(
          {},
          viaRunTool('c1', 'read_files', readA),
          viaRunTool('c2', 'calculate', { expression: '1' }),
          viaRunTool('c3', 'read_files', { paths: ['a.txt'] }),
        );
        expect(planned.map((p) => p.decision.kind)).toEqual(['run', 'run', 'follow']);
        expect(planned[2]?.decision).toEqual({ kind: 'follow', leader: 0 });
      });

      it('follows the first even when the first is deduped from the run', async () => {
        const planned = await plan(
          { dedupe: [entry('read_files', readA, contentsOfA)] },
          viaRunTool('c1', 'read_files', readA),
          viaRunTool('c2', 'read_files', readA),
        );
        expect(statusOf(planned[0])).toBe('deduped');
        expect(planned[1]?.decision).toEqual({ kind: 'follow', leader: 0 });
      });

      it('follows the first even when the first ends in pass 1, so it gets the same status', async () => {
        const planned = await plan(
          { fetched: 'initial' },
          viaRunTool('c1', 'calculate', {}),
          viaRunTool('c2', 'calculate', {}),
        );
        expect(statusOf(planned[0])).toBe('schema');
        expect(planned[1]?.decision).toEqual({ kind: 'follow', leader: 0 });
      });
    });

    it('reads the dedupe map and the cache once for the whole round', async () => {
      let dedupeReads = 0;
      let cacheReads = 0;
      const input = sessionInput();
      const { findDedupe, findCached } = input;
      input.findDedupe = (keys) => {
        dedupeReads++;
        return findDedupe(keys);
      };
      input.findCached = (keys) => {
        cacheReads++;
        return findCached(keys);
      };
      await preflight(
        round(
          viaRunTool('c1', 'read_files', readA),
          viaRunTool('c2', 'fetch_page', { url: 'https://x.test/' }),
          viaRunTool('c3', 'search_web', { query: 'q' }),
        ),
        input,
      );
      expect([dedupeReads, cacheReads]).toEqual([1, 1]);
    });
  });

  describe('step 3 lookahead: side effects earlier in the round', () => {
    it('stops a later read_files of a path an earlier edit_file touches from being deduped', async () => {
      const planned = await plan(
        { dedupe: [entry('read_files', readA, contentsOfA, ['a.txt'])] },
        viaRunTool('c1', 'edit_file', { path: './a.txt', content: 'new' }),
        viaRunTool('c2', 'read_files', readA),
      );
      expect(planned[0]?.decision).toEqual({ kind: 'run', needsConfirm: true });
      expect(planned[1]?.decision).toEqual({ kind: 'run', needsConfirm: false });
    });

    it('stops a read_files after the edit from following an identical read before it', async () => {
      const planned = await plan(
        {},
        viaRunTool('c1', 'read_files', readA),
        viaRunTool('c2', 'edit_file', { path: 'b/../a.txt', content: 'new' }),
        viaRunTool('c3', 'read_files', readA),
        viaRunTool('c4', 'read_files', readA),
      );
      expect(planned.map((p) => p.decision.kind)).toEqual(['run', 'run', 'run', 'follow']);
      expect(planned[3]?.decision).toEqual({ kind: 'follow', leader: 2 });
    });

    it('still dedupes a read of another path after an edit_file', async () => {
      const readB = { paths: ['b.txt'] };
      const [, p] = await plan(
        { dedupe: [entry('read_files', readB, { files: [] }, ['b.txt'])] },
        viaRunTool('c1', 'edit_file', { path: 'a.txt', content: 'new' }),
        viaRunTool('c2', 'read_files', readB),
      );
      expect(statusOf(p)).toBe('deduped');
    });

    it('stops a later find_files from being deduped after an edit_file, which may create a file', async () => {
      const pattern = { pattern: '*.txt' };
      const [, p] = await plan(
        { dedupe: [entry('find_files', pattern, { paths: [] })] },
        viaRunTool('c1', 'edit_file', { path: 'new.txt', content: 'x' }),
        viaRunTool('c2', 'find_files', pattern),
      );
      expect(statusOf(p)).toBe('run');
    });

    it('stops every later read_files and find_files from being deduped after a run_command', async () => {
      const pattern = { pattern: '*.txt' };
      const planned = await plan(
        {
          dedupe: [
            entry('read_files', readA, contentsOfA, ['a.txt']),
            entry('find_files', pattern, { paths: ['a.txt'] }),
            entry('calculate', { expression: '1' }, { value: 1 }),
          ],
        },
        viaRunTool('c1', 'run_command', { command: 'make' }),
        viaRunTool('c2', 'read_files', readA),
        viaRunTool('c3', 'find_files', pattern),
        viaRunTool('c4', 'calculate', { expression: '1' }),
      );
      expect(planned.map(statusOf)).toEqual(['run', 'run', 'run', 'deduped']);
    });

    it('leaves a read_files before the edit_file deduped', async () => {
      const [p] = await plan(
        { dedupe: [entry('read_files', readA, contentsOfA, ['a.txt'])] },
        viaRunTool('c1', 'read_files', readA),
        viaRunTool('c2', 'edit_file', { path: 'a.txt', content: 'new' }),
      );
      expect(statusOf(p)).toBe('deduped');
    });

    it('ignores an edit_file that ends in pass 1 and so never runs', async () => {
      const [, p] = await plan(
        { dedupe: [entry('read_files', readA, contentsOfA, ['a.txt'])] },
        viaRunTool('c1', 'edit_file', { path: 'a.txt' }),
        viaRunTool('c2', 'read_files', readA),
      );
      expect(statusOf(p)).toBe('deduped');
    });
  });

  describe('step 4: deferred schemas', () => {
    it('returns the schema of a tool not yet shown to the session, and marks it fetched', async () => {
      const input = sessionInput({ fetched: 'initial' });
      const [p] = await preflight(round(viaRunTool('c1', 'calculate', { expression: '1' })), input);
      const r = resultOf(p);
      expect(r).toMatchObject({ id: 'c1', name: 'calculate', status: 'schema' });
      expect(r.output).toEqual({
        tool: expect.objectContaining({ name: 'calculate', parameters: expect.any(Object), concurrency: 'concurrent' }),
        message: expect.stringMatching(/Call calculate again/),
      });
      expect(input.fetched.has('calculate')).toBe(true);
    });

    it('lists what is wrong with the args it was sent', async () => {
      const [p] = await plan({ fetched: 'initial' }, viaRunTool('c1', 'read_files', { path: 'a.txt' }));
      expect(resultOf(p).output).toMatchObject({
        problems: ['args is missing the required property "paths"', 'args has an unexpected property "path"'],
      });
    });

    it('answers the schema of an unfetched tool called with args that are not an object, naming that, then invalid', async () => {
      const input = sessionInput({ fetched: 'initial' });
      const planned = await preflight(
        round(
          viaRunTool('c1', 'calculate', '{oops'),
          viaRunTool('c2', 'calculate', [1]),
          viaRunTool('c3', 'read_files', 'null'),
          viaRunTool('c4', 'teleport', '{oops'),
        ),
        input,
      );
      expect(planned.map(statusOf)).toEqual(['schema', 'invalid', 'schema', 'unknown']);
      expect(resultOf(planned[0]).output).toMatchObject({
        problems: [expect.stringMatching(/^args are not valid JSON/)],
      });
      expect(resultOf(planned[1]).error?.message).toBe('calculate: args must be a JSON object, got an array');
      expect(resultOf(planned[2]).output).toMatchObject({ problems: ['args must be a JSON object, got null'] });
      expect(input.fetched.has('calculate')).toBe(true);
      expect(input.fetched.has('read_files')).toBe(true);
    });

    it('never dedupes a call whose args are not an object with a call of {} args', async () => {
      const planned = await plan(
        { dedupe: [entry('find_files', {}, { paths: [] })] },
        viaRunTool('c1', 'find_files', '{oops'),
        viaRunTool('c2', 'find_files', '[]'),
      );
      expect(planned.map(statusOf)).toEqual(['invalid', 'invalid']);
    });

    it('lets later calls of the round see the schema fetched', async () => {
      const planned = await plan(
        { fetched: 'initial' },
        viaRunTool('c1', 'read_files', readA),
        viaRunTool('c2', 'read_files', { paths: ['b.txt'] }),
      );
      expect(planned.map(statusOf)).toEqual(['schema', 'run']);
    });

    it('sends a name with no definition on to step 5, fetching nothing', async () => {
      const input = sessionInput({ fetched: 'initial' });
      const [p] = await preflight(round(viaRunTool('c1', 'teleport')), input);
      expect(statusOf(p)).toBe('unknown');
      expect(input.fetched.has('teleport')).toBe(false);
    });

    it('is skipped for a defined tool nothing can run: unknown at once, no schema first (DESIGN.md step 5)', async () => {
      const planned = await plan(
        { fetched: 'initial' },
        viaRunTool('c1', 'chat_history', { path: 'a' }),
        viaRunTool('c2', 'chat_history', { path: 'b' }),
      );
      expect(planned.map(statusOf)).toEqual(['unknown', 'unknown']);
      const r = resultOf(planned[0]);
      expect(r.error?.message).toMatch(/no tool named "chat_history".*find_tools/);
    });

    it('still shows a parked tool’s schema first: the client or a person runs it', async () => {
      const planned = await plan(
        { fetched: 'initial', runnable: [] },
        viaRunTool('c1', 'ask_user', { question: 'Which?' }),
      );
      expect(planned.map(statusOf)).toEqual(['schema']);
    });

    describe('when the provider is claude-code', () => {
      it('answers the first direct call of each tool with its schema', async () => {
        const planned = await plan(
          { provider: 'claude-code', fetched: 'initial' },
          direct('c1', 'calculate', { expression: '1' }),
          direct('c2', 'calculate', { expression: '2' }),
          direct('c3', 'find_tools', { names: [] }),
        );
        expect(planned.map(statusOf)).toEqual(['schema', 'run', 'run']);
      });
    });
  });

  describe('step 5: existence', () => {
    it('answers unknown for a name with no definition, pointing at find_tools', async () => {
      const r = resultOf((await plan({}, viaRunTool('c1', 'teleport')))[0]);
      expect(r).toMatchObject({ name: 'teleport', status: 'unknown', error: { code: 'unknown' } });
      expect(r.error?.message).toMatch(/no tool named "teleport".*find_tools/);
    });

    it('answers unknown for a defined tool with no registered handler', async () => {
      const r = resultOf((await plan({ runnable: [] }, viaRunTool('c1', 'calculate', { expression: '1' })))[0]);
      expect(r).toMatchObject({ name: 'calculate', status: 'unknown' });
      expect(r.error?.message).toMatch(/no tool named "calculate" that can run here \(no handler is registered/);
    });

    it('answers error/unavailable, never unknown, for a known tool when no worker is announced at all (API.md v1.2)', async () => {
      const r = resultOf(
        (await plan({ runnable: [], noWorkers: true }, viaRunTool('c1', 'calculate', { expression: '1' })))[0],
      );
      expect(r).toMatchObject({ name: 'calculate', status: 'error', error: { code: 'unavailable' } });
      expect(r.error?.message).toMatch(/did not run: no worker is available/);
      const nowhere = resultOf((await plan({ runnable: [], noWorkers: true }, viaRunTool('c2', 'nowhere', {})))[0]);
      expect(nowhere.status).toBe('unknown');
    });

    it('lets a client tool go on with no handler: pass 2 parks it for its client (API.md v1.1)', async () => {
      const [p] = await plan({ runnable: [] }, direct('c1', 'ui_pick'));
      expect(p?.decision).toEqual({ kind: 'run', needsConfirm: false });
    });

    it('lets ask_user go on with no handler: pass 2 parks it for a person', async () => {
      const [p] = await plan({ runnable: [] }, viaRunTool('c1', 'ask_user', { question: 'Which?' }));
      expect(p?.decision).toEqual({ kind: 'run', needsConfirm: false });
      expect(p?.dedupable).toBe(false);
    });

    it('still validates a parked tool’s args first: ask_user without a question is invalid', async () => {
      const r = resultOf((await plan({ runnable: [] }, viaRunTool('c1', 'ask_user', { question: 5 })))[0]);
      expect(r).toMatchObject({ name: 'ask_user', status: 'invalid' });
    });

    it('needs no handler for find_tools, which the coordinator answers', async () => {
      const [p] = await plan({ runnable: [] }, direct('c1', 'find_tools', { names: ['calculate'] }));
      expect(p?.decision.kind).toBe('run');
    });
  });

  describe('step 6: validation', () => {
    it('answers invalid with the errors in words the model can act on', async () => {
      const r = resultOf((await plan({}, viaRunTool('c1', 'read_files', { path: 'a.txt' })))[0]);
      expect(r).toMatchObject({ name: 'read_files', status: 'invalid', error: { code: 'invalid' } });
      expect(r.error?.message).toBe(
        'Invalid args for read_files: args is missing the required property "paths"; args has an unexpected property "path".',
      );
      expect(r.error?.details).toEqual({
        problems: ['args is missing the required property "paths"', 'args has an unexpected property "path"'],
      });
    });

    it('names the property and the type expected', async () => {
      const r = resultOf((await plan({}, viaRunTool('c1', 'calculate', { expression: 5 })))[0]);
      expect(r.error?.message).toContain('args.expression must be of type string');
    });

    it('comes before the confirm gate, so nobody is asked to approve a call that cannot run', async () => {
      const [p] = await plan({}, viaRunTool('c1', 'run_command', {}));
      expect(statusOf(p)).toBe('invalid');
    });
  });

  describe('step 7: the result cache', () => {
    const page = { url: 'https://example.test/' };
    const hit = {
      key: callKey('fetch_page', page),
      output: { text: 'cached page' },
      callId: 'old',
      round: 'r0',
      storedAt: 0,
    };

    it('returns cached for a valid call with a live hit', async () => {
      const [p] = await plan({ cached: [hit] }, viaRunTool('c1', 'fetch_page', page));
      expect(resultOf(p)).toEqual({
        id: 'c1',
        name: 'fetch_page',
        status: 'cached',
        output: { text: 'cached page' },
        durationMs: 0,
      });
    });

    it('runs the call when the cache holds nothing for it', async () => {
      const [p] = await plan({ cached: [hit] }, viaRunTool('c1', 'fetch_page', { url: 'https://other.test/' }));
      expect(p?.decision).toEqual({ kind: 'run', needsConfirm: false });
    });

    describe('when the call could not run anyway', () => {
      it('answers invalid, not cached, for args that do not validate', async () => {
        const bad = { url: 'https://example.test/', extra: 1 };
        const [p] = await plan(
          { cached: [{ ...hit, key: callKey('fetch_page', bad) }] },
          viaRunTool('c1', 'fetch_page', bad),
        );
        expect(statusOf(p)).toBe('invalid');
      });

      it('answers unknown, not cached, for a tool without a handler', async () => {
        const [p] = await plan({ cached: [hit], runnable: [] }, viaRunTool('c1', 'fetch_page', page));
        expect(statusOf(p)).toBe('unknown');
      });

      it('answers schema, not cached, for a tool whose schema was not shown yet', async () => {
        const [p] = await plan({ cached: [hit], fetched: 'initial' }, viaRunTool('c1', 'fetch_page', page));
        expect(statusOf(p)).toBe('schema');
      });
    });

    it('never serves a request carrying credentials from the cache', async () => {
      const withCookie = { url: 'https://example.test/', headers: { Cookie: 'sid=1' } };
      const input = sessionInput({ cached: [{ ...hit, key: callKey('http_request', withCookie) }] });
      const [p] = await preflight(round(viaRunTool('c1', 'http_request', withCookie)), input);
      expect(p?.decision.kind).toBe('run');
      expect(input.cacheAsked).toEqual([]);
    });

    it('never serves a non-GET http_request from the cache', async () => {
      const post = { url: 'https://example.test/', method: 'POST' };
      const [p] = await plan(
        { cached: [{ ...hit, key: callKey('http_request', post) }] },
        viaRunTool('c1', 'http_request', post),
      );
      expect(p?.decision).toEqual({ kind: 'run', needsConfirm: true });
    });

    it('prefers the run’s dedupe entry to the cache', async () => {
      const [p] = await plan(
        { cached: [hit], dedupe: [entry('fetch_page', page, { text: 'deduped page' })] },
        viaRunTool('c1', 'fetch_page', page),
      );
      expect(resultOf(p)).toMatchObject({ status: 'deduped', output: { text: 'deduped page' } });
    });
  });

  describe('step 8: the confirm gate', () => {
    const calls = [
      viaRunTool('c1', 'run_command', { command: 'ls' }),
      viaRunTool('c2', 'edit_file', { path: 'a.txt', content: 'x' }),
      viaRunTool('c3', 'http_request', { url: 'https://x.test/', method: 'DELETE' }),
      viaRunTool('c4', 'api_pay', { invoice: 'inv-1' }),
      viaRunTool('c5', 'http_request', { url: 'https://x.test/' }),
      viaRunTool('c6', 'calculate', { expression: '1' }),
    ];
    const needs = (planned: PlannedCall[]) =>
      planned.map((p) => (p.decision.kind === 'run' ? p.decision.needsConfirm : p.decision.kind));

    it('asks for run_command, edit_file, non-GET http_request and confirm-flagged tools', async () => {
      expect(needs(await plan({}, ...calls))).toEqual([true, true, true, true, false, false]);
    });

    it('does not ask for tools the session auto-approves', async () => {
      expect(needs(await plan({ autoApprove: ['run_command', 'api_pay'] }, ...calls))).toEqual([
        false,
        true,
        true,
        false,
        false,
        false,
      ]);
    });

    it('asks for nothing when the session auto-approves all', async () => {
      expect(needs(await plan({ autoApprove: 'all' }, ...calls))).toEqual([false, false, false, false, false, false]);
    });

    it('matches auto-approval against the resolved name, so approving run_tool approves nothing', async () => {
      expect(needs(await plan({ autoApprove: ['run_tool'] }, ...calls)).slice(0, 4)).toEqual([true, true, true, true]);
    });
  });

  describe('find_tools', () => {
    it('is answered in pass 1, with the definitions it found', async () => {
      const [p] = await plan({}, direct('c1', 'find_tools', { names: ['calculate'] }));
      expect(p?.decision).toMatchObject({
        kind: 'run',
        needsConfirm: false,
        output: { tools: [expect.objectContaining({ name: 'calculate' })] },
      });
    });

    it('fetches the schemas it returns for later calls of the round', async () => {
      const planned = await plan(
        { fetched: 'initial' },
        direct('c1', 'find_tools', { names: ['read_files'] }),
        viaRunTool('c2', 'read_files', readA),
        viaRunTool('c3', 'calculate', { expression: '1' }),
      );
      expect(planned.map(statusOf)).toEqual(['run', 'run', 'schema']);
    });

    it('does not fetch for calls before it in the round', async () => {
      const planned = await plan(
        { fetched: 'initial' },
        viaRunTool('c1', 'read_files', readA),
        direct('c2', 'find_tools', { names: ['read_files'] }),
      );
      expect(statusOf(planned[0])).toBe('schema');
    });

    it('fetches the tools its query matches', async () => {
      const input = sessionInput({ fetched: 'initial' });
      await preflight(round(direct('c1', 'find_tools', { query: 'arithmetic expression' })), input);
      expect(input.fetched.has('calculate')).toBe(true);
      expect(input.fetched.has('read_files')).toBe(false);
    });

    it('offers only tools that can run now, listing the others as missing', async () => {
      const [p] = await plan(
        { runnable: ['calculate'] },
        direct('c1', 'find_tools', { names: ['calculate', 'read_files', 'chat_history'] }),
      );
      expect(p?.decision).toMatchObject({
        output: { tools: [expect.objectContaining({ name: 'calculate' })], missing: ['read_files', 'chat_history'] },
      });
    });
  });

  describe('keys worked out before pass 1 (lookupKeys)', () => {
    it('keys dedupable calls with run_tool unwrapped, and skips the rest', () => {
      const calls = round(
        viaRunTool('c1', 'read_files', readA),
        viaRunTool('c2', 'run_command', { command: 'ls' }),
        viaRunTool('c3', 'run_tool', {}),
        direct('c4', 'calculate', '{bad'),
        { id: 'c5', args: {} },
      );
      const known = lookupKeys(calls, (name) => name !== 'run_command');
      expect([...known.keys()].map((c) => c.id)).toEqual(['c1']);
      expect(known.get(calls[0] as NormalCall)).toEqual({
        name: 'read_files',
        args: readA,
        key: callKey('read_files', readA),
      });
    });

    it('lets pass 1 reuse a key worked out ahead for a call that resolves the same way', async () => {
      const calls = round(viaRunTool('c1', 'read_files', readA));
      const known = lookupKeys(calls, () => true);
      const first = calls[0] as NormalCall;
      const ahead = known.get(first) as KnownKey;
      known.set(first, { ...ahead, key: 'key-from-ahead' });
      const input = sessionInput({ knownKeys: known });
      const [p] = await preflight(calls, input);
      expect(p?.key).toBe('key-from-ahead');
      expect(input.dedupeAsked).toEqual(['key-from-ahead']);
    });

    it('works the key out again for a call that resolves otherwise (run_tool under claude-code)', async () => {
      const calls = round(viaRunTool('c1', 'calculate', { expression: '1' }));
      const known = lookupKeys(calls, () => true);
      const [p] = await preflight(calls, sessionInput({ provider: 'claude-code', knownKeys: known }));
      expect(p?.name).toBe('run_tool');
      expect(p?.key).not.toBe(known.get(calls[0] as NormalCall)?.key);
    });
  });
});
