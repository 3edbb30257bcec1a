import { createMCPClient, ElicitationRequestSchema } from '@ai-sdk/mcp';
import { createOpenAI } from '@ai-sdk/openai';
import { Agent, MCPServerStreamableHttp, OpenAIProvider, Runner, setTracingDisabled } from '@openai/agents';
import { generateText, stepCountIs } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, uid } from '../conformance/api.js';
import { START_HOOK_TIMEOUT_MS, useService } from '../conformance/fixture.js';
import type { Mode } from '../conformance/service.js';
import { CONFIRM_COMMAND, type FakeModel, MCP_MODEL, MCP_QUESTION, startFakeModel } from './fake-model.js';
import { inspectorCli } from './inspector.js';

// Real third-party MCP clients against `/mcp` of real processes, behind a bearer token, in the
// three modes (`bin/tool-dispatch dev`; a coordinator with two workers on a test Redis; the same on
// a 3-primary Redis Cluster): the MCP Inspector's CLI mode, the OpenAI Agents SDK
// (MCPServerStreamableHttp) and the AI SDK's MCP client. The two SDKs each drive an agent loop
// against a fake model server of ours (fake-model.ts): the model calls `calculate` and a
// `run_command` that waits at the confirm gate, which the test approves through the API
// (`GET`/`POST .../confirmations`) while the client waits on its `tools/call`; the model then
// answers from what came back. Needs the build (`pnpm test` builds first).

const TOKEN = 'mcp-clients-test-token';
/** A tool as tools/list gives it. */
interface ListedTool {
  name: string;
  inputSchema?: unknown;
  annotations?: Record<string, unknown>;
}
const MODES: readonly Mode[] = ['embedded', 'distributed', 'cluster'];
setTracingDisabled(true); // the Agents SDK would export traces to OpenAI

describe.concurrent.each(MODES)('%s mode', (mode) => {
  describe.sequential('real MCP clients on /mcp', () => {
    const fx = useService(mode, { env: { TD_API_TOKEN: TOKEN }, token: TOKEN });
    const mcpUrl = (query = '') => `${fx.service.base}/mcp${query}`;
    let model: FakeModel;
    beforeAll(async () => {
      model = await startFakeModel({ withCommand: true });
    }, START_HOOK_TIMEOUT_MS);
    afterAll(async () => {
      await model?.close();
    });

    it('MCP Inspector CLI: tools/list gives every tool with its full schema and annotations, no run_tool', async () => {
      const r = await inspectorCli(mcpUrl(), ['--method', 'tools/list'], TOKEN);
      expect(r.code, r.stderr).toBe(0);
      const tools = r.json?.result?.tools as ListedTool[];
      const byName = new Map(tools.map((t) => [t.name, t]));
      expect(byName.has('run_tool')).toBe(false);
      expect(byName.has('find_tools')).toBe(true);
      expect(byName.get('calculate')).toMatchObject({
        inputSchema: { type: 'object', properties: { expression: { type: 'string' } } },
        annotations: { readOnlyHint: true },
      });
      expect(byName.get('run_command')?.annotations).toMatchObject({ destructiveHint: true });
      expect(byName.get('edit_file')?.annotations).toMatchObject({ destructiveHint: true });
      expect(byName.get('read_files')?.annotations).toMatchObject({ readOnlyHint: true });
    }, 120_000);

    it('MCP Inspector CLI: tools/call runs calculate; the same call again in the same run is deduped, in a bound session', async () => {
      const session = uid('insp');
      await fx.api.putSession(session, { provider: 'mcp' });
      const run = uid('run');
      const call = (expression: string) =>
        inspectorCli(
          mcpUrl(`?session=${session}`),
          [
            '--method',
            'tools/call',
            '--tool-name',
            'calculate',
            '--tool-args-json',
            JSON.stringify({ expression }),
            '--tool-metadata',
            `tool-dispatch/run=${run}`,
          ],
          TOKEN,
        );
      const first = await call('6*7');
      expect(first.code, first.stderr).toBe(0);
      expect(first.json?.result).toMatchObject({
        isError: false,
        content: [{ type: 'text', text: expect.stringContaining('42') }],
        structuredContent: { value: 42 },
        _meta: { 'tool-dispatch/result': { status: 'ok' } },
      });
      const again = await call('6*7');
      expect(again.code, again.stderr).toBe(0);
      const meta = (again.json?.result?._meta as Record<string, unknown> | undefined)?.['tool-dispatch/result'];
      expect(meta).toMatchObject({ status: 'deduped' });
      expect(again.json?.result).toMatchObject({ isError: false, structuredContent: { value: 42 } });
      // Both calls were rounds of the bound session, in the run the _meta named.
      const history = await fx.api.history(session, 'calculate');
      expect(history.map((h) => [h.run, h.status])).toEqual([
        [run, 'ok'],
        [run, 'deduped'],
      ]);
    }, 120_000);

    it('MCP Inspector CLI: bad args come back isError with the validation message; no token is refused', async () => {
      const bad = await inspectorCli(
        mcpUrl(),
        ['--method', 'tools/call', '--tool-name', 'calculate', '--tool-args-json', '{"expression": 42}'],
        TOKEN,
      );
      // The Inspector exits 5 on a result with isError (and prints it): the call reached the server and came back an error.
      expect(bad.code, bad.stderr).toBe(5);
      expect(bad.json?.result).toMatchObject({
        isError: true,
        content: [
          {
            type: 'text',
            text: expect.stringMatching(/Invalid args for calculate: args\.expression must be of type string/),
          },
        ],
        _meta: { 'tool-dispatch/result': { status: 'invalid', error: { code: 'invalid' } } },
      });
      // Without the token /mcp answers 401, which the Inspector takes as "OAuth needed" (exit 3).
      const noToken = await inspectorCli(mcpUrl(), ['--method', 'tools/list', '--stored-auth-only']);
      expect(noToken.code, noToken.stderr).toBe(3);
      expect(noToken.json?.result).toBeUndefined();
      expect(noToken.stderr).toMatch(/auth_required/);
    }, 120_000);

    it('OpenAI Agents SDK (MCPServerStreamableHttp): an agent loop calls through /mcp; the command is approved through the API while it waits', async () => {
      const mcp = new MCPServerStreamableHttp({
        url: mcpUrl(),
        name: 'tool-dispatch',
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
      });
      await mcp.connect();
      try {
        // The Agents SDK (0.20, SDK v2 client, versionNegotiation 'auto') speaks 2026-07-28 with us:
        // no MCP session; its session is the token's, mcp-<token name> (TD_API_TOKEN: api-token).
        expect(mcp.sessionId).toBeUndefined();
        const session = 'mcp-api-token';
        const agent = new Agent({
          name: 'calculator',
          instructions: 'Use the tools.',
          model: MCP_MODEL,
          mcpServers: [mcp],
        });
        const runner = new Runner({
          modelProvider: new OpenAIProvider({ baseURL: `${model.url}/v1`, apiKey: 'fake' }),
        });
        const loop = runner.run(agent, MCP_QUESTION);
        loop.catch(() => undefined); // awaited below
        // Made on the client's first request, which the loop sends after this line may run.
        for (
          const end = Date.now() + 60_000;
          (await fx.api.request('GET', `/v1/sessions/${session}`)).status !== 200;
        ) {
          if (Date.now() > end) throw new Error(`session ${session} never made`);
          await new Promise((r) => setTimeout(r, 50));
        }
        await approveOneCommand(fx.api, session);
        const result = await loop;
        expect(result.finalOutput).toBe('6*7 = 42, says the calculator. The command ran once approved.');
        await expectLoopHistory(fx.api, session);
        // The model was offered the tools the client listed from /mcp.
        expect(model.offered.at(-1)).toEqual(expect.arrayContaining(['calculate', 'run_command', 'find_tools']));
      } finally {
        await mcp.close();
      }
    }, 120_000);

    it('AI SDK MCP client: generateText loops through /mcp in a bound session; the command is approved through the API while it waits', async () => {
      const session = uid('aisdk');
      await fx.api.putSession(session, { provider: 'mcp' });
      const mcp = await createMCPClient({
        transport: {
          type: 'http',
          url: mcpUrl(),
          headers: { Authorization: `Bearer ${TOKEN}`, 'TD-Session': session },
        },
      });
      try {
        const openai = createOpenAI({ baseURL: `${model.url}/v1`, apiKey: 'fake' });
        const loop = generateText({
          model: openai.chat(MCP_MODEL),
          tools: await mcp.tools(),
          prompt: MCP_QUESTION,
          stopWhen: stepCountIs(5),
        });
        loop.catch(() => undefined); // awaited below
        await approveOneCommand(fx.api, session);
        const result = await loop;
        expect(result.steps).toHaveLength(2);
        expect(result.text).toBe('6*7 = 42, says the calculator. The command ran once approved.');
        await expectLoopHistory(fx.api, session);
      } finally {
        await mcp.close();
      }
    }, 120_000);

    for (const answer of ['approves', 'declines'] as const)
      it(`AI SDK MCP client with elicitation: the command's approval is asked of the client, which ${answer}; nothing waits in the API`, async () => {
        const session = uid('elicit');
        await fx.api.putSession(session, { provider: 'mcp' });
        const mcp = await createMCPClient({
          transport: {
            type: 'http',
            url: mcpUrl(),
            headers: { Authorization: `Bearer ${TOKEN}`, 'TD-Session': session },
          },
          capabilities: { elicitation: {} },
        });
        const asked: Array<{ message: string; schema: unknown }> = [];
        mcp.onElicitationRequest(ElicitationRequestSchema, (request) => {
          asked.push({ message: request.params.message, schema: request.params.requestedSchema });
          return answer === 'approves' ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
        });
        try {
          const openai = createOpenAI({ baseURL: `${model.url}/v1`, apiKey: 'fake' });
          const result = await generateText({
            model: openai.chat(MCP_MODEL),
            tools: await mcp.tools(),
            prompt: MCP_QUESTION,
            stopWhen: stepCountIs(5),
          });
          expect(asked).toHaveLength(1);
          expect(asked[0]?.message).toContain('run_command');
          expect(asked[0]?.message).toContain(CONFIRM_COMMAND);
          expect(asked[0]?.schema).toMatchObject({
            type: 'object',
            properties: { approve: { type: 'boolean' } },
            required: ['approve'],
          });
          const history = await fx.api.history(session);
          const cmd = history.find((h) => h.name === 'run_command');
          if (answer === 'approves') {
            expect(result.text).toBe('6*7 = 42, says the calculator. The command ran once approved.');
            expect(cmd).toMatchObject({ status: 'ok', output: { stdout: 'approved-through-the-api\n' } });
          } else {
            expect(result.text).toMatch(/^6\*7 = 42, says the calculator\. The command did not run: /);
            expect(cmd?.status).toBe('denied');
          }
          expect(await fx.api.pending(session)).toEqual([]);
        } finally {
          await mcp.close();
        }
      }, 120_000);
  });

  /** Waits for the loop's run_command at the confirm gate (the client is waiting on it) and approves it. */
  async function approveOneCommand(api: Api, session: string): Promise<void> {
    const [pending] = await api.waitPending(session, 1, 60_000);
    expect(pending).toMatchObject({ name: 'run_command', args: { command: CONFIRM_COMMAND } });
    const answer = await api.answer(session, pending?.confirmationId ?? '', { approve: true });
    expect(answer.status, answer.text).toBe(200);
  }

  /** The session's history holds the loop's two calls, each once, both ok: the command ran once approved. */
  async function expectLoopHistory(api: Api, session: string): Promise<void> {
    const history = await api.history(session);
    expect(history.map((h) => `${h.name} ${h.status}`).sort()).toEqual(['calculate ok', 'run_command ok']);
    const cmd = history.find((h) => h.name === 'run_command');
    expect(cmd?.output).toMatchObject({ exitCode: 0, stdout: 'approved-through-the-api\n' });
  }
});
