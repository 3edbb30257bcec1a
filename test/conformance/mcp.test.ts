// MCP servers (API.md "MCP servers", issue 12) through the real service in both modes: the npm
// servers server-everything (stdio, and Streamable HTTP on loopback) and server-filesystem, a
// server that cannot start, and the tests' own stdio server (test/support/mcp-fake-server.mjs)
// for what the npm ones cannot be made to do on demand.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mcpToolName } from '@tool-dispatch/shared';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../support/net.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';
import { until } from '../support/until.js';
import { type Api, type Call, direct, type Result, rt, uid } from './api.js';
import { describeModes, useService } from './fixture.js';
import { type ProcessGroup, REPO_ROOT, sleep, startExtraWorker, stopGroup } from './service.js';

const pkgBin = (pkg: string) => {
  const dir = path.join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', pkg);
  const json = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  return path.join(dir, Object.values(json.bin)[0] as string);
};
const EVERYTHING = pkgBin('server-everything');
const FILESYSTEM = pkgBin('server-filesystem');
const FAKE = path.join(REPO_ROOT, 'test', 'support', 'mcp-fake-server.mjs');

const ECHO = mcpToolName('everything', 'echo');
const SUM = mcpToolName('everything', 'get-sum');
const LONG = mcpToolName('everything', 'trigger-long-running-operation');
const ELICIT = mcpToolName('everything', 'trigger-elicitation-request');
const READ = mcpToolName('fs', 'read_text_file');
const WEB_ECHO = mcpToolName('web', 'echo');
const GATE_ECHO = mcpToolName('gate', 'echo');
const GATE_SUM = mcpToolName('gate', 'get-sum');
const GATE_LONG = mcpToolName('gate', 'trigger-long-running-operation');
const fake = (tool: string) => mcpToolName('fake', tool);

/** The text of an ok MCP call's first content block. */
const textOf = (r: Result) => String(r.output?.content?.[0]?.text ?? '');

function expectOk(r: Result | undefined, what: string): Result {
  expect(r?.status, `${what}: ${JSON.stringify(r)}`).toBe('ok');
  return r as Result;
}

async function catalog(api: Api): Promise<Map<string, Record<string, unknown>>> {
  const r = await api.request('GET', '/v1/tools');
  const list = (r.json.tools ?? r.json) as Array<Record<string, unknown>>;
  return new Map(list.map((t) => [String(t.name), t]));
}

/** Waits until the catalog lists every name (servers connect after start-up). */
async function listed(api: Api, names: string[], ms = 45_000): Promise<Map<string, Record<string, unknown>>> {
  for (const end = Date.now() + ms; ; await sleep(200)) {
    const cat = await catalog(api);
    const missing = names.filter((n) => !cat.has(n));
    if (missing.length === 0) return cat;
    if (Date.now() > end) throw new Error(`the catalog still lacks ${missing.join(', ')}`);
  }
}

/** Retries a call until it answers ok (a server reconnecting), or fails after `ms`. */
async function untilOk(api: Api, s: string, call: () => Call, ms = 30_000): Promise<Result> {
  let last: Result | undefined;
  for (const end = Date.now() + ms; Date.now() < end; await sleep(250)) {
    last = await api.one(s, call());
    if (last.status === 'ok') return last;
  }
  throw new Error(`never ok within ${ms} ms; last: ${JSON.stringify(last)}`);
}

/** The session's parked input of a call, once GET inputs lists it (undefined after 20 s). */
async function parkedFor(api: Api, s: string, callId: string): Promise<Record<string, unknown> | undefined> {
  for (const end = Date.now() + 20_000; Date.now() < end; await sleep(50)) {
    const r = await api.request('GET', `/v1/sessions/${s}/inputs`);
    const found = (r.json.inputs as Array<Record<string, unknown>>).find((i) => i.callId === callId);
    if (found) return found;
  }
  return undefined;
}

/**
 * server-everything over stdio, started only while `hold` does not exist (else it exits 1 at
 * once): a test that kills it holds its restart, so the calls while it is down are known to find it
 * down, whatever the reconnect's backoff and the machine's load.
 */
const heldEverything = (hold: string, mark: string) => [
  '-e',
  `if (require('node:fs').existsSync(${JSON.stringify(hold)})) process.exit(1); import(require('node:url').pathToFileURL(process.argv[1]).href);`,
  EVERYTHING,
  'stdio',
  mark,
];

/** The stdio children whose command line carries `mark` (the servers a test kills). */
function pidsWith(mark: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', mark], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .filter((pid) => pid !== process.pid);
  } catch {
    return [];
  }
}

describeModes('MCP servers', (mode) => {
  const mark = `td-mcp-test-${mode}-${Math.random().toString(36).slice(2, 8)}`;
  let tmp = '';
  let config = '';
  let fsRoot = '';
  let fakeLog = '';
  let hold = '';
  let web: ChildProcess | undefined;
  let receiver: OtlpReceiver | undefined;
  let webPort = 0;
  /** Starts the Streamable HTTP server-everything on webPort; resolves once it listens. */
  const startWeb = async () => {
    web = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
      env: { PATH: process.env.PATH, HOME: tmp, PORT: String(webPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the Streamable HTTP server-everything did not start')), 20_000);
      const onData = (d: Buffer) => {
        if (/listening on port/i.test(d.toString())) {
          clearTimeout(timer);
          resolve();
        }
      };
      web?.stdout?.on('data', onData);
      web?.stderr?.on('data', onData);
    });
  };

  beforeAll(async () => {
    tmp = await realpath(await mkdtemp(path.join(tmpdir(), `td-mcp-${mode}-`)));
    fsRoot = path.join(tmp, 'fs-root');
    mkdirSync(fsRoot);
    writeFileSync(path.join(fsRoot, 'planted.txt'), 'planted for the MCP test\n');
    fakeLog = path.join(tmp, 'fake.log');
    hold = path.join(tmp, 'everything.hold');
    receiver = await startOtlpReceiver();
    webPort = await freePort();
    await startWeb();
    const servers = {
      everything: { command: 'node', args: heldEverything(hold, mark) },
      fs: { command: 'node', args: [FILESYSTEM, fsRoot] },
      web: { url: `http://127.0.0.1:${webPort}/mcp` },
      gate: { command: 'node', args: [EVERYTHING, 'stdio'], confirm: ['echo'], timeoutMs: 1500 },
      broken: { command: 'node', args: ['-e', 'process.exit(1)'] },
      fake: {
        command: 'node',
        args: [FAKE],
        env: { MCP_FAKE_LOG: fakeLog, MCP_FAKE_TOOLS_FILE: path.join(tmp, 'fake-tools.json') },
      },
    };
    config = path.join(tmp, 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: servers }));
  }, 60_000);
  afterAll(async () => {
    web?.kill('SIGKILL');
    await receiver?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  const f = useService(mode, {
    envFor: () => ({
      TD_MCP_CONFIG: config,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver?.url,
      OTEL_BSP_SCHEDULE_DELAY: '200',
    }),
  });
  /** Workers a test adds (distributed mode), stopped at the end. */
  const extraWorkers: ProcessGroup[] = [];
  afterAll(async () => {
    await Promise.all(extraWorkers.map((g) => stopGroup(g)));
  });

  it('lists every tool of every server that is up, serial, deferred, source mcp, with the server and its inputSchema', async () => {
    const cat = await listed(f.api, [ECHO, SUM, READ, WEB_ECHO, fake('extra_2')]);
    const echo = cat.get(ECHO) as Record<string, unknown>;
    expect(echo).toMatchObject({
      concurrency: 'serial',
      deferred: true,
      source: 'mcp',
      server: 'everything',
      confirm: false,
      cacheable: false,
    });
    expect(echo.parameters).toMatchObject({
      type: 'object',
      properties: { message: { type: 'string' } },
      required: ['message'],
    });
    expect(cat.get(READ)).toMatchObject({ source: 'mcp', server: 'fs' });
    expect(cat.get(WEB_ECHO)).toMatchObject({ source: 'mcp', server: 'web' });
    // Every page of tools/list (the fake server answers 4 a page).
    for (const t of ['sleep', 'set_tools', 'big', 'fail', 'ask', 'extra_1', 'extra_2'])
      expect(cat.has(fake(t)), t).toBe(true);
    // Two tools with one catalog name: the second is refused.
    expect(cat.has(fake('dotted_name'))).toBe(true);
    expect([...cat.keys()].filter((n) => n === fake('dotted_name'))).toHaveLength(1);
    // A server that never starts has no tools; built-ins say where they come from.
    expect([...cat.keys()].some((n) => n.startsWith('mcp__broken__'))).toBe(false);
    expect(cat.get('read_files')?.source).toBe('builtin');
  });

  it('defers MCP tools like any: left out of the tools array, schema on the first call, then run', async () => {
    await listed(f.api, [ECHO]);
    const s = await f.api.session([]);
    const view = await f.api.request('GET', `/v1/sessions/${s}/tools`);
    expect(JSON.stringify(view.json.tools)).not.toContain(ECHO);
    // Named in the context: one line per tool, or (a large catalog) in its server's line (API.md v1.2).
    expect(String(view.json.context)).toMatch(/mcp__everything__echo|MCP server everything: .*\becho\b/);
    const first = await f.api.one(s, rt(ECHO, { message: 'hi' }));
    expect(first.status).toBe('schema');
    const found = await f.api.one(s, direct('find_tools', { query: 'echo everything' }));
    expect(JSON.stringify(found.output)).toContain(ECHO);
    expect(textOf(expectOk(await f.api.one(s, rt(ECHO, { message: 'hi' })), 'echo after its schema'))).toContain('hi');
  });

  it('runs calls on stdio and Streamable HTTP servers: {content, structuredContent?} as the server gave it', async () => {
    await listed(f.api, [ECHO, READ, SUM, WEB_ECHO]);
    const s = await f.api.session([ECHO, READ, SUM, WEB_ECHO]);
    const planted = path.join(fsRoot, 'planted.txt');
    const { results } = await f.api.round(s, uid('run'), [
      rt(ECHO, { message: 'hello mcp' }),
      rt(READ, { path: planted }),
      rt(SUM, { a: 17, b: 25 }),
      rt(WEB_ECHO, { message: 'over http' }),
    ]);
    expect(textOf(expectOk(results[0], 'echo'))).toContain('hello mcp');
    expect(expectOk(results[1], 'read').output.structuredContent).toEqual({ content: 'planted for the MCP test\n' });
    expect(textOf(expectOk(results[2], 'sum'))).toMatch(/\b42\b/);
    expect(textOf(expectOk(results[3], 'web echo'))).toContain('over http');
    const h = await f.api.history(s, ECHO);
    expect(h.some((e) => e.id === results[0]?.id && e.status === 'ok')).toBe(true);
  });

  it('validates args against the server schema: bad args are invalid and never reach the server', async () => {
    await listed(f.api, [fake('extra_1')]);
    const s = await f.api.session([fake('extra_1'), SUM]);
    const calls = () =>
      existsSync(fakeLog)
        ? readFileSync(fakeLog, 'utf8')
            .split('\n')
            .filter((l) => l.includes('"call":"extra_1"')).length
        : 0;
    const before = calls();
    const r = await f.api.one(s, rt(fake('extra_1'), { x: 'not a number' }));
    expect(r.status).toBe('invalid');
    expect((await f.api.one(s, rt(SUM, { a: 'x', b: 2 }))).status).toBe('invalid');
    expect(calls()).toBe(before);
    expect(
      expectOk(await f.api.one(s, rt(fake('extra_1'), { x: 3 })), 'valid extra_1').output.content[0].text,
    ).toContain('"x":3');
  });

  it('hands an MCP tool the call idempotencyKey as _meta["tool-dispatch/idempotencyKey"], the one its result carries', async () => {
    await listed(f.api, [fake('sleep')]);
    const s = await f.api.session([fake('sleep')]);
    // A unique fraction of a millisecond marks this call in the server's log.
    const ms = Number((1 + Math.random()).toFixed(9));
    const r = expectOk(await f.api.one(s, rt(fake('sleep'), { ms })), 'sleep');
    const key = (r as { idempotencyKey?: string }).idempotencyKey;
    expect(key).toMatch(/^td_/);
    const entry = readFileSync(fakeLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { call?: string; args?: { ms?: number }; meta?: Record<string, unknown> | null })
      .find((e) => e.call === 'sleep' && e.args?.ms === ms);
    expect(entry?.meta?.['tool-dispatch/idempotencyKey']).toBe(key);
  });

  it('maps isError to error/handler_error with the text as message and the content under details', async () => {
    await listed(f.api, [READ, fake('fail')]);
    const s = await f.api.session([READ, fake('fail')]);
    const r = await f.api.one(s, rt(fake('fail'), { text: 'the tool said no' }));
    expect(r.status).toBe('error');
    expect(r.error?.code).toBe('handler_error');
    expect(r.error?.message).toBe('the tool said no');
    expect(r.error?.details).toEqual({ content: [{ type: 'text', text: 'the tool said no' }] });
    const missing = await f.api.one(s, rt(READ, { path: path.join(fsRoot, 'nope.txt') }));
    expect(missing.status).toBe('error');
    expect(missing.error?.code).toBe('handler_error');
    expect(missing.error?.message).toMatch(/nope\.txt|ENOENT|no such file/i);
  });

  it('runs MCP calls of a run serially, even on one server that could overlap them', async () => {
    await listed(f.api, [fake('sleep')]);
    const s = await f.api.session([fake('sleep')]);
    const calls = [1, 2, 3].map(() => rt(fake('sleep'), { ms: 300 + Math.floor(Math.random() * 10) }));
    const { results } = await f.api.round(s, uid('run'), calls);
    for (const r of results) expectOk(r, 'sleep');
    const spans = readFileSync(fakeLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { tool?: string; start: number; end?: number })
      .filter((e) => e.tool === 'sleep' && e.end !== undefined)
      .slice(-3)
      .sort((a, b) => a.start - b.start);
    expect(spans).toHaveLength(3);
    for (let i = 1; i < spans.length; i++) expect(spans[i]?.start).toBeGreaterThanOrEqual(spans[i - 1]?.end as number);
  });

  it('passes the gate for a tool the operator flags confirm, and its server timeoutMs is the deadline', async () => {
    const cat = await listed(f.api, [GATE_ECHO, GATE_SUM, GATE_LONG]);
    expect(cat.get(GATE_ECHO)?.confirm).toBe(true);
    expect(cat.get(GATE_SUM)?.confirm).toBe(false);
    const s = await f.api.session([GATE_ECHO, GATE_SUM, GATE_LONG]);
    const run = uid('run');
    const round = f.api.round(s, run, [rt(GATE_ECHO, { message: 'gated' })]);
    const [pending] = await f.api.waitPending(s, 1);
    expect(pending?.name).toBe(GATE_ECHO);
    const ok = await f.api.answer(s, String(pending?.confirmationId), { approve: true });
    expect(ok.status).toBe(200);
    expect(textOf(expectOk((await round).results[0], 'approved echo'))).toContain('gated');
    const started = Date.now();
    const slow = await f.api.one(s, rt(GATE_LONG, { duration: 20, steps: 20 }));
    expect(slow.status).toBe('error');
    expect(slow.error?.code).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(12_000);
    // The server stays usable after the deadline cancelled its call.
    expect(textOf(expectOk(await f.api.one(s, rt(GATE_SUM, { a: 1, b: 2 })), 'sum after a timeout'))).toMatch(/\b3\b/);
  });

  it('a cancelled long call ends cancelled and leaves its server usable', async () => {
    await listed(f.api, [LONG, ECHO]);
    const s = await f.api.session([LONG, ECHO]);
    const run = uid('run');
    const started = Date.now();
    const long = f.api.round(s, run, [rt(LONG, { duration: 30, steps: 30 })]);
    await sleep(1_500);
    const c = await f.api.request('DELETE', `/v1/sessions/${s}/runs/${run}`);
    expect(c.status).toBe(200);
    const r = (await long).results[0] as Result;
    expect(r.status).toBe('error');
    expect(r.error?.code).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(textOf(expectOk(await f.api.one(s, rt(ECHO, { message: 'after cancel' })), 'echo after cancel'))).toContain(
      'after cancel',
    );
  });

  it('a killed server fails its next call at once, naming it, and answers again after the reconnect', async () => {
    await listed(f.api, [ECHO]);
    const s = await f.api.session([ECHO]);
    expectOk(await f.api.one(s, rt(ECHO, { message: 'before' })), 'echo before the kill');
    const pids = pidsWith(mark);
    expect(pids.length).toBeGreaterThan(0);
    writeFileSync(hold, ''); // no restart until the call while down has answered
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    const down = await f.api.one(s, rt(ECHO, { message: 'while down' }));
    // At once: an error naming the server (not a wait for a restart that cannot come, which would end `timeout`).
    expect(down).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
    expect(down.error?.message).toContain('"everything"');
    rmSync(hold);
    expect(textOf(await untilOk(f.api, s, () => rt(ECHO, { message: 'after' })))).toContain('after');
    // Restarted: new processes carry the mark.
    expect(pidsWith(mark).some((p) => !pids.includes(p))).toBe(true);
  });

  it('a Streamable HTTP server that restarts: its calls fail fast naming it, then go to a new session', async () => {
    await listed(f.api, [WEB_ECHO]);
    const s = await f.api.session([WEB_ECHO]);
    expectOk(await f.api.one(s, rt(WEB_ECHO, { message: 'before' })), 'web echo before the restart');
    const old = web;
    old?.kill('SIGKILL');
    await new Promise((r) => old?.once('exit', r));
    // While it is gone its calls fail at once naming it (not `timeout`); then it restarts on the same port.
    const down = await f.api.one(s, rt(WEB_ECHO, { message: 'while down' }));
    expect(down).toMatchObject({ status: 'error', error: { code: 'handler_error' } });
    expect(down.error?.message).toContain('"web"');
    await startWeb();
    expect(textOf(await untilOk(f.api, s, () => rt(WEB_ECHO, { message: 'new session' })))).toContain('new session');
  });

  it('list_changed updates the catalog: a new tool is listed, one that left is unknown', async () => {
    await listed(f.api, [fake('set_tools'), fake('extra_1')]);
    const s = await f.api.session([fake('set_tools'), fake('extra_1')]);
    expectOk(await f.api.one(s, rt(fake('set_tools'), { extra: ['extra_9'] })), 'set_tools');
    await listed(f.api, [fake('extra_9')], 15_000);
    for (const end = Date.now() + 15_000; (await catalog(f.api)).has(fake('extra_1')) && Date.now() < end; )
      await sleep(200);
    expect((await catalog(f.api)).has(fake('extra_1'))).toBe(false);
    expect((await f.api.one(s, rt(fake('extra_1'), { x: 1 }))).status).toBe('unknown');
    expectOk(await f.api.one(s, rt(fake('set_tools'), { extra: ['extra_1', 'extra_2'] })), 'set_tools back');
    await listed(f.api, [fake('extra_1')], 15_000);
  });

  it('cuts an over-long result and flags it, never sending it whole', async () => {
    await listed(f.api, [fake('big')]);
    const s = await f.api.session([fake('big')]);
    const r = expectOk(await f.api.one(s, rt(fake('big'), { bytes: 1_500_000 })), 'big');
    expect(r.output.truncated).toBe(true);
    expect(JSON.stringify(r.output).length).toBeLessThan(600_000);
    expect(textOf(r)).toMatch(/^x+\n\[cut:/);
  });

  it('turns an elicitation into a parked input of kind elicitation, answered through the inputs endpoints', async () => {
    await listed(f.api, [ELICIT, fake('ask')]);
    const s = await f.api.session([ELICIT, fake('ask')]);
    const run = uid('run');
    const call = rt(fake('ask'), { message: 'Your name?' });
    const round = f.api.round(s, run, [call]);
    const input = await parkedFor(f.api, s, call.id);
    expect(input).toMatchObject({ kind: 'elicitation', name: fake('ask'), run, callId: call.id });
    expect(((input?.args ?? {}) as Record<string, unknown>).message).toBe('Your name?');
    expect(((input?.args ?? {}) as Record<string, unknown>).requestedSchema).toMatchObject({ type: 'object' });
    const id = String(input?.inputId);
    const bad = await f.api.request('POST', `/v1/sessions/${s}/inputs/${id}`, { output: 'Ada' });
    expect(bad.status).toBe(400);
    const good = await f.api.request('POST', `/v1/sessions/${s}/inputs/${id}`, {
      output: { action: 'accept', content: { name: 'Ada' } },
    });
    expect(good.status).toBe(200);
    const r = expectOk((await round).results[0], 'ask after the answer');
    expect(r.output.structuredContent).toEqual({ action: 'accept', content: { name: 'Ada' } });
    // server-everything's own elicitation tool, declined.
    const call2 = rt(ELICIT, {});
    const round2 = f.api.round(s, run, [call2]);
    const input2 = await parkedFor(f.api, s, call2.id);
    expect(input2?.kind).toBe('elicitation');
    await f.api.request('POST', `/v1/sessions/${s}/inputs/${String(input2?.inputId)}`, {
      output: { action: 'decline' },
    });
    expect(textOf(expectOk((await round2).results[0], 'declined elicitation'))).toMatch(/declined/i);
  });

  it('traces an MCP call: its execute span names the server and the tool by its name there', async () => {
    await listed(f.api, [SUM]);
    const s = await f.api.session([SUM]);
    const r = expectOk(await f.api.one(s, rt(SUM, { a: 2, b: 3 })), 'sum');
    const spans = await (receiver as OtlpReceiver).waitFor(
      (all) => all.some((x) => x.name === `execute ${SUM}` && x.attributes['td.call.id'] === r.id),
      20_000,
    );
    const span = spans.find((x) => x.name === `execute ${SUM}` && x.attributes['td.call.id'] === r.id);
    expect(span?.attributes['mcp.server']).toBe('everything');
    expect(span?.attributes['mcp.tool.name']).toBe('get-sum');
  });

  it('exposes td_mcp_servers_up per server and counts calls by server, tool and status', async () => {
    await listed(f.api, [ECHO]);
    const s = await f.api.session([ECHO]);
    // Embedded: the one process's /metrics. Distributed: a worker's own port (the MCP servers run
    // there), one more worker given a PORT, asked until a call of echo has landed on it.
    let scrape = async () => (await f.api.request('GET', '/metrics')).text;
    if (mode !== 'embedded') {
      const port = await freePort();
      extraWorkers.push(await startExtraWorker(f.service, { PORT: String(port) }, 'worker-metrics'));
      scrape = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    }
    const countedOf = (text: string) =>
      Number(text.match(/^td_mcp_calls_total\{server="everything",tool="echo",status="ok"\} (\d+)$/m)?.[1] ?? 0);
    const text = await until(
      async () => {
        expectOk(await f.api.one(s, rt(ECHO, { message: 'counted' })), 'echo');
        const t = await scrape();
        return countedOf(t) >= 1 ? t : undefined;
      },
      { what: 'an ok echo call counted in td_mcp_calls_total', timeoutMs: 60_000 },
    );
    expect(text).toMatch(/^td_mcp_servers_up\{server="everything"\} 1$/m);
    expect(text).toMatch(/^td_mcp_servers_up\{server="broken"\} 0$/m);
    expect(countedOf(text)).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it('says in the log which tools and servers it could not take', async () => {
    await listed(f.api, [ECHO]);
    const log = f.service.logTail(2_000);
    expect(log).toMatch(/mcp broken: down/);
    expect(log).toMatch(/mcp fake: tool "dotted_name" left out: its catalog name .* is taken/);
    expect(existsSync(config)).toBe(true);
  });
});
