// A call that reaches a worker before its MCP server's first connection is made (a worker just
// started, scaled up, while another worker put the tool in the catalog): it waits for that
// connection within its deadline, then runs; it never fails as "no handler" on a worker that
// is about to have the tool. The tests' own stdio server answers initialize late on demand.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type ExecJob, mcpToolName } from '@tool-dispatch/shared';
import { HandlerRegistry, McpHub, runJob } from '@tool-dispatch/worker';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './conformance/service.js';
import { execJob } from './support/exec-jobs.js';

const FAKE = path.join(REPO_ROOT, 'test', 'support', 'mcp-fake-server.mjs');
const START_DELAY_MS = 1_500;
const config = { httpAllow: [], searchUrl: undefined };

let workspace: string;
let hub: McpHub;
let registry: HandlerRegistry;

/** A job for an MCP tool (serial, as MCP calls run) in this test's workspace. */
function job(name: string, args: Record<string, unknown>, timeoutMs = 10_000): ExecJob {
  return execJob(name, args, { workspace, queue: 'serial', timeoutMs });
}

beforeEach(async () => {
  workspace = await mkdtemp(path.join(tmpdir(), 'td-mcp-first-'));
  hub = new McpHub({
    servers: [
      {
        name: 'fake',
        transport: 'stdio',
        command: process.execPath,
        args: [FAKE],
        env: { MCP_FAKE_START_DELAY_MS: String(START_DELAY_MS) },
        confirm: false,
      },
    ],
  });
  registry = new HandlerRegistry();
  registry.addSource(hub);
  // Not awaited: the worker takes jobs while its servers connect in the background.
  void hub.start();
});

afterEach(async () => {
  await hub.close();
  await rm(workspace, { recursive: true, force: true });
});

describe('a call on a worker whose MCP server is still on its first connection', () => {
  it('waits for the connection, then runs the tool', async () => {
    expect(hub.status()[0]?.state).toBe('connecting');
    const started = Date.now();
    const outcome = await runJob(
      registry,
      job(mcpToolName('fake', 'extra_1'), { x: 1 }),
      new AbortController().signal,
      config,
      'w',
    );
    expect(outcome.status, JSON.stringify(outcome)).toBe('ok');
    expect(outcome.status === 'ok' && outcome.output).toEqual({ content: [{ type: 'text', text: 'extra_1 {"x":1}' }] });
    // It did wait for the late initialize, not answer from somewhere else.
    expect(Date.now() - started).toBeGreaterThanOrEqual(START_DELAY_MS - 100);
  });

  it('fails a tool the server turns out not to have, naming it, once connected', async () => {
    const name = mcpToolName('fake', 'no_such_tool');
    const outcome = await runJob(registry, job(name, {}), new AbortController().signal, config, 'w');
    expect(outcome).toMatchObject({ status: 'error', code: 'handler_error' });
    expect(outcome.status === 'error' && outcome.message).toContain(`no handler for ${name} on this worker`);
    expect(hub.status()[0]?.state).toBe('up');
  });

  it('keeps to the call deadline while it waits', async () => {
    const outcome = await runJob(
      registry,
      job(mcpToolName('fake', 'extra_1'), {}, 300),
      new AbortController().signal,
      config,
      'w',
    );
    expect(outcome).toMatchObject({ status: 'error', code: 'timeout' });
    const message = outcome.status === 'error' ? outcome.message : '';
    expect(message).toMatch(/waited for the first connection/);
    expect(message).not.toMatch(/may still be running/);
  });

  it('is still refused at once for a name that is no MCP tool', () => {
    expect(registry.resolve('not_an_mcp_tool')).toBeUndefined();
  });
});
