import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as McpClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { type InputHandler, TdClient } from '@tool-dispatch/client';
import { type CallResult, resolveConfig } from '@tool-dispatch/shared';
import { McpHub } from '@tool-dispatch/worker';
import Table from 'cli-table3';
import { createEngine } from './embedded.js';
import { startCoordinator } from './serve.js';

interface DemoOptions {
  keep: boolean;
  log: (line: string) => void;
}

const PASS1: Record<string, string> = {
  deduped: 'dedupe hit',
  cached: 'cache hit',
  schema: 'schema sent',
  refused: 'refused',
  invalid: 'invalid args',
  unknown: 'no such tool',
  denied: 'denied',
};

/** A local server the demo's http_request calls reach (allowed through TD_HTTP_ALLOW). */
async function startDocsServer(): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server = http.createServer((req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ path: req.url, version: '2.4.1', changelog: 'Faster rounds.' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits: () => hits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function summary(r: CallResult): string {
  const o = r.output as Record<string, unknown> | undefined;
  let text: string;
  if (r.error) text = r.error.message;
  else if (r.status === 'schema') text = `schema of ${r.name}; call again`;
  else if (o && Array.isArray(o.tools)) text = `${o.tools.length} definitions`;
  else if (o && Array.isArray(o.files))
    text = (o.files as Array<{ path: string; content: string | null }>)
      .map((f) => `${f.path}: ${JSON.stringify((f.content ?? '').trim().slice(0, 40))}`)
      .join(', ');
  else if (o && Array.isArray(o.paths)) text = (o.paths as string[]).join(', ');
  else if (o && Array.isArray(o.entries)) text = historySummary(o.entries as Array<Record<string, unknown>>);
  else if (o && 'contentType' in o) text = `${String(o.bytes)} bytes of ${String(o.contentType)} to ${String(o.path)}`;
  else if (o && 'exitCode' in o) text = `exit ${String(o.exitCode)}: ${String(o.stdout).trim().slice(0, 40)}`;
  else if (o && 'status' in o && 'body' in o) text = `HTTP ${String(o.status)} ${String(o.body).slice(0, 40)}`;
  else if (o && Array.isArray(o.content)) text = mcpSummary(o.content as Array<{ type?: string; text?: string }>);
  else text = JSON.stringify(o ?? null);
  text = text.replace(/\s+/g, ' ');
  if (r.dedupedFrom) text = `= ${r.dedupedFrom} · ${text}`;
  return text.length > 64 ? `${text.slice(0, 61)}...` : text;
}

/** An MCP result's content in a line: its text blocks. */
function mcpSummary(content: Array<{ type?: string; text?: string }>): string {
  return `mcp: ${content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join(' ')}`;
}

/** A history tool's entries in a line: each call, what it was and how it ended, newest first. */
function historySummary(entries: Array<Record<string, unknown>>): string {
  if (entries.length === 0) return 'no entries';
  return entries.map((e) => `${String(e.id)} ${String(e.name)} ${String(e.status)}`).join('; ');
}

function printRound(
  log: (l: string) => void,
  title: string,
  calls: Array<{ id: string; label: string }>,
  results: CallResult[],
  approved: Set<string>,
) {
  const table = new Table({
    head: ['call', 'as called', 'tool', 'pass 1', 'status', 'ms', 'ran on', 'result'],
    style: { head: [], border: [] },
  });
  results.forEach((r, i) => {
    const parked = r.ranOn === 'person' || r.ranOn === 'client';
    const pass1 = PASS1[r.status] ?? (approved.has(r.id) ? 'approved' : parked ? 'passed, parked' : 'passed');
    const status = r.error && r.status === 'error' ? `error/${r.error.code}` : r.status;
    table.push([r.id, calls[i]?.label ?? '', r.name, pass1, status, String(r.durationMs), r.ranOn ?? '-', summary(r)]);
  });
  log(`\n${title}`);
  log(table.toString());
}

type DemoCall = { id: string; name: string; args: Record<string, unknown>; label: string };
type Play = (title: string, run: string, calls: DemoCall[]) => Promise<void>;

const rt = (id: string, name: string, args: Record<string, unknown>): DemoCall => ({
  id,
  name: 'run_tool',
  args: { name, args },
  label: `run_tool(${name})`,
});
const direct = (id: string, name: string, args: Record<string, unknown>): DemoCall => ({ id, name, args, label: name });

/**
 * The demo's MCP server: the repo's server-filesystem (a dev dependency) over stdio, confined to
 * the session's workspace; undefined when it is not installed (a production install).
 */
function demoMcpHub(workspace: string, log: (line: string) => void): McpHub | undefined {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const bin = path.join(dir, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
    if (existsSync(bin)) {
      const servers = [
        {
          name: 'notes',
          transport: 'stdio' as const,
          command: process.execPath,
          args: [bin, workspace],
          env: {},
          confirm: false,
        },
      ];
      return new McpHub({ servers, log: (line) => (line.includes('down') ? log(`  ${line}`) : undefined) });
    }
    if (path.dirname(dir) === dir) {
      log('(@modelcontextprotocol/server-filesystem is not installed: the MCP round is left out)');
      return undefined;
    }
  }
}

/** `tool-dispatch demo`: a realistic coding-agent session over HTTP against an embedded coordinator. */
export async function runDemo(options: DemoOptions): Promise<void> {
  const { log } = options;
  const root = await mkdtemp(path.join(tmpdir(), 'tool-dispatch-demo-'));
  const session = 'demo-session';
  const workspace = path.join(root, 'default', session);
  await seedWorkspace(workspace);
  const mcp = demoMcpHub(workspace, log);
  await mcp?.start();
  const docs = await startDocsServer();
  const config = resolveConfig({ workspaceRoot: root, httpAllow: [new URL(docs.url).host], mode: 'embedded' }, {});
  const coordinator = await startCoordinator({
    config,
    port: 0,
    host: '127.0.0.1',
    log: () => {},
    makeEngine: (c) => createEngine({ config: c, ...(mcp ? { mcp } : {}) }),
  });
  const client = new TdClient({ baseUrl: coordinator.url });
  log(`tool-dispatch demo: embedded coordinator at ${coordinator.url}, workspaces in ${root}`);
  try {
    await client.putSession(session, {
      provider: 'openai',
      autoApprove: ['edit_file'],
      clientTools: [EDITOR_SELECTION],
    });
    const tools = await client.tools(session);
    log(
      `session ${session} (provider openai): tools array = ${tools.tools.map((t) => t.name).join(', ')}; ${tools.context.split('\n').length - 3} deferred tools named in the turn context`,
    );
    const person = approveAsAPerson(client, session, log);
    // runRound answers the round's parked calls (ask_user, the client tool) while it waits.
    const play: Play = async (title, run, calls) => {
      const { results } = await client.runRound(
        session,
        run,
        calls.map(({ label: _l, ...c }) => c),
        { onInput: answerAsTheBackend(log), pollIntervalMs: 200 },
      );
      printRound(log, title, calls, results, person.approved);
    };
    await playRounds(play, docs.url);
    if (mcp) await playMcpRound(play);
    await playMcpClientRound(coordinator.url, log);
    await person.stop();
    const history = await client.history(session);
    const byStatus = new Map<string, number>();
    for (const e of history) byStatus.set(e.status, (byStatus.get(e.status) ?? 0) + 1);
    log(`\nhistory: ${history.length} results recorded (${[...byStatus].map(([s, n]) => `${s} ${n}`).join(', ')})`);
    log(
      `docs server hits: ${docs.hits()} (the GET of round 4 and the download; the cached GET of round 5 never reached it)`,
    );
  } finally {
    await coordinator.stop();
    await mcp?.close();
    await docs.close();
    if (!options.keep) await rm(root, { recursive: true, force: true });
    else log(`workspace kept at ${root}`);
  }
}

/** The demo's client tool: the agent backend's editor answers it (through the inputs endpoints). */
const EDITOR_SELECTION = {
  name: 'editor_selection',
  description: 'The text the user has selected in their editor, with its file and line.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
};

/** Answers parked calls as an agent backend would: a person picks ask_user's first choice; the editor says what is selected. */
function answerAsTheBackend(log: (line: string) => void): InputHandler {
  return function answerParkedCall(input) {
    if (input.name === 'ask_user') {
      const choices = input.args.choices as string[] | undefined;
      const answer = choices?.[0] ?? 'yes';
      log(
        `  > input.requested ${input.inputId} (${input.kind}): ask_user ${JSON.stringify(input.args.question)}; the person answers ${JSON.stringify(answer)}`,
      );
      return { output: answer };
    }
    const output = { file: 'src/util.ts', line: 1, text: 'twice' };
    log(
      `  > input.requested ${input.inputId} (${input.kind}): ${input.name}; the client answers ${JSON.stringify(output)}`,
    );
    return { output };
  };
}

/** A small project in the session's workspace for the agent to work on. */
async function seedWorkspace(ws: string): Promise<void> {
  await mkdir(path.join(ws, 'src'), { recursive: true });
  await writeFile(path.join(ws, 'src', 'app.ts'), "export const greeting = 'Hello';\n");
  await writeFile(path.join(ws, 'src', 'util.ts'), 'export const twice = (x: number) => 2 * x;\n');
  await writeFile(path.join(ws, 'README.md'), '# demo project\n');
}

/** Approves every confirmation as a person would, from the event stream; `approved` names the calls approved. */
function approveAsAPerson(
  client: TdClient,
  session: string,
  log: (line: string) => void,
): { approved: Set<string>; stop(): Promise<void> } {
  const approved = new Set<string>();
  const stopEvents = new AbortController();
  const watcher = (async function watchConfirmations() {
    for await (const e of client.events(session, { signal: stopEvents.signal })) {
      if (e.name !== 'confirm.requested') continue;
      const d = e.data as { confirmationId: string; callId: string; name: string };
      approved.add(d.callId);
      log(`  > confirm.requested for ${d.name} (${d.callId}): approving ${d.confirmationId}`);
      await client.answerConfirmation(session, d.confirmationId, { approve: true });
    }
  })().catch(() => {});
  return {
    approved,
    stop: async () => {
      stopEvents.abort();
      await watcher;
    },
  };
}

/** What the demo asks of the sandbox: a file outside the workspace, which a sandboxed command does not see. */
const SANDBOX_PROBE =
  'if [ -r /etc/shadow ]; then echo "not sandboxed: /etc/shadow readable"; else echo "sandboxed: no /etc/shadow here"; fi';

/** The demo's rounds, in order: each shows a rule of the three passes. */
async function playRounds(play: Play, docsUrl: string): Promise<void> {
  await play('Round 1 · fetch schemas; a direct call of a deferred tool is refused', 'run-1', [
    direct('c1', 'find_tools', {
      names: ['read_files', 'find_files', 'edit_file', 'run_command', 'http_request', 'download_file', 'ask_user'],
    }),
    direct('c2', 'read_files', { paths: ['README.md'] }),
  ]);
  await play('Round 2 · parallel reads, a duplicate, an unfetched schema, invalid args', 'run-1', [
    rt('c3', 'find_files', { pattern: 'src/**/*.ts' }),
    rt('c4', 'read_files', { paths: ['src/app.ts'] }),
    rt('c5', 'read_files', { paths: ['src/util.ts'] }),
    rt('c6', 'read_files', { paths: ['src/app.ts'] }),
    rt('c7', 'calculate', { expression: '6*7' }),
    rt('c8', 'read_files', { paths: 'src/app.ts' }),
  ]);
  await play(
    'Round 3 · an edit (auto-approved) invalidates the earlier read; commands wait for approval and run sandboxed',
    'run-1',
    [
      rt('c9', 'edit_file', { path: './src/app.ts', old: "'Hello'", new: "'Hi there'" }),
      rt('c10', 'read_files', { paths: ['src/util.ts'] }),
      rt('c11', 'run_command', { command: 'grep -c "Hi there" src/app.ts && ls src' }),
      // API.md v1.3: the command's sandbox has no credentials and nothing outside its workspace.
      rt('c11s', 'run_command', { command: SANDBOX_PROBE }),
    ],
  );
  await play('Round 4 · the read of src/app.ts runs again (fresh content); a GET to the docs server', 'run-1', [
    rt('c12', 'read_files', { paths: ['src/app.ts'] }),
    rt('c13', 'calculate', { expression: '6*7' }),
    rt('c14', 'http_request', { url: `${docsUrl}/release` }),
  ]);
  await play('Round 5 · a new run: the same GET comes from the 30-minute result cache', 'run-2', [
    rt('c15', 'http_request', { url: `${docsUrl}/release` }),
    rt('c16', 'no_such_tool', {}),
  ]);
  await play('Round 6 · a download into the workspace; find_tools fetches the history tools', 'run-2', [
    rt('c17', 'download_file', { url: `${docsUrl}/release`, path: 'docs/release.json' }),
    direct('c18', 'find_tools', { query: 'history' }),
  ]);
  await play('Round 7 · what the session did to a file, and what failed so far, from what pass 3 recorded', 'run-2', [
    rt('c19', 'file_history', { path: './src/app.ts' }),
    rt('c20', 'error_history', { limit: 5 }),
  ]);
  await play('Round 8 · parked calls: a client tool the backend answers, then a question a person answers', 'run-2', [
    direct('c21', 'editor_selection', {}),
    rt('c22', 'ask_user', { question: 'Rename twice() to double()?', choices: ['rename it', 'leave it'] }),
  ]);
}

/** Round 9: the tools of an MCP server (server-filesystem over stdio) as deferred catalog tools, serial, validated. */
async function playMcpRound(play: Play): Promise<void> {
  await play("Round 9 · an MCP server's tools (server-filesystem over stdio): schemas, then serial calls", 'run-3', [
    direct('c23', 'find_tools', { names: ['mcp__notes__list_directory', 'mcp__notes__read_text_file'] }),
  ]);
  await play('Round 10 · MCP calls run serially on the server; bad args never reach it', 'run-3', [
    rt('c24', 'mcp__notes__list_directory', { path: '.' }),
    rt('c25', 'mcp__notes__read_text_file', { path: 'src/util.ts' }),
    rt('c26', 'mcp__notes__read_text_file', { path: 42 }),
  ]);
}

/** One `tools/call` of round 11 and what the MCP client got back. */
interface McpClientCall {
  label: string;
  name: string;
  args: Record<string, unknown>;
}

const MCP_CLIENT_CALLS: McpClientCall[] = [
  { label: 'm1', name: 'calculate', args: { expression: '6*7' } },
  { label: 'm2', name: 'calculate', args: { expression: '6*7' } },
  { label: 'm3', name: 'run_command', args: { command: 'echo approved through the MCP client' } },
  { label: 'm4', name: 'read_files', args: { paths: 42 } },
];

/**
 * Round 11: an MCP client (the official SDK's) on the coordinator's `/mcp`: tools/list, then
 * tools/call through the three passes in one run; the command's approval is asked of the client
 * (elicitation/create), which approves it.
 */
async function playMcpClientRound(baseUrl: string, log: (line: string) => void): Promise<void> {
  const client = new McpClient({ name: 'demo-mcp-client', version: '1' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler('elicitation/create', async (request) => {
    const message = String((request.params as { message?: unknown }).message ?? '').replace(/\s+/g, ' ');
    log(`  > elicitation/create from /mcp: ${JSON.stringify(message.slice(0, 90))}; the MCP client approves`);
    return { action: 'accept' as const, content: { approve: true } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`)));
  try {
    const { tools } = await client.listTools();
    const hint = (name: string) => {
      const a = tools.find((t) => t.name === name)?.annotations;
      return a?.readOnlyHint ? 'read-only' : a?.destructiveHint ? 'destructive' : 'plain';
    };
    log(
      `\nRound 11 · an MCP client (the official SDK) on ${baseUrl}/mcp: MCP session ${client.transport?.sessionId ?? '?'}`,
    );
    log(
      `  tools/list: ${tools.length} tools, each with its full schema (calculate ${hint('calculate')}, run_command ${hint('run_command')}; no run_tool: ${!tools.some((t) => t.name === 'run_tool')})`,
    );
    const table = new Table({
      head: ['call', 'tools/call', 'status', 'ms', 'isError', 'content'],
      style: { head: [], border: [] },
    });
    for (const c of MCP_CLIENT_CALLS) {
      const r = await client.callTool({ name: c.name, arguments: c.args, _meta: { 'tool-dispatch/run': 'mcp-run-1' } });
      const meta = (r._meta?.['tool-dispatch/result'] ?? {}) as { status?: string; durationMs?: number };
      const content = Array.isArray(r.content) ? r.content : [];
      const text = content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join(' ');
      const shown = text.replace(/\s+/g, ' ');
      table.push([
        c.label,
        `${c.name} ${JSON.stringify(c.args)}`,
        meta.status ?? '?',
        String(meta.durationMs ?? '-'),
        String(r.isError === true),
        shown.length > 60 ? `${shown.slice(0, 57)}...` : shown,
      ]);
    }
    log(table.toString());
  } finally {
    await client.close();
  }
}
