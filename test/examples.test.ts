import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

// The agent loops of examples/, as a user runs them: each compiled under --strict with its own
// tsconfig (one `tsc -b` for all four), then run as a real process that starts its fake model
// server and `bin/tool-dispatch dev`, and prints what happened. The fake servers refuse a
// conversation the real API would refuse (a call left unanswered, an answer to no call), so a
// wrong view from tool-dispatch fails the example. Needs the build (`pnpm test` builds first).

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const EXAMPLES = ['openai-chat', 'openai-responses', 'anthropic', 'ai-sdk'] as const;
/** Examples beside a folder's main.ts: [name, its compiled file under examples/dist]. */
const MORE = [['anthropic-tool-search', 'anthropic/tool-search.js']] as const;
type Example = (typeof EXAMPLES)[number] | (typeof MORE)[number][0];

let outputs: Map<Example, Promise<string>>;

beforeAll(async () => {
  await run(process.execPath, [tsc, '-b', ...EXAMPLES.map((e) => path.join(root, 'examples', e))]).catch(
    (e: { stdout?: string }) => {
      throw new Error(`the examples do not compile:\n${e.stdout ?? String(e)}`);
    },
  );
  // All four at once; each test awaits its own.
  const mains: Array<readonly [Example, string]> = [
    ...EXAMPLES.map((e): readonly [Example, string] => [e, `${e}/main.js`]),
    ...MORE,
  ];
  outputs = new Map(
    mains.map(([e, file]) => {
      const main = path.join(root, 'examples', 'dist', file);
      const output = run(process.execPath, [main], { cwd: root, timeout: 60_000 }).then(({ stdout }) => stdout);
      output.catch(() => undefined); // awaited (and reported) by its test
      return [e, output];
    }),
  );
}, 120_000);

const FINAL = 'final answer: 6*7 = 42, says the calculator.';
const ran = (id: string, name: string) => new RegExp(`^\\s+${id}\\s+${name}\\s+ok\\s`, 'm');

describe('examples/', () => {
  it('openai-chat: runs both calls, answers the custom tool call invalid, and ends on the final text', async () => {
    const out = await outputs.get('openai-chat');
    expect(out).toMatch(/^turn 1: 3 tool calls$/m);
    expect(out).toMatch(ran('call_find', 'find_tools'));
    expect(out).toMatch(/call_calc\s+calculate\s+ok\s+\{"value":42\}/);
    expect(out).toMatch(/call_custom\s+calculate\s+invalid\s+"calculate" was called as an OpenAI custom tool call/);
    expect(out?.trim().split('\n').at(-1)).toBe(FINAL);
  }, 90_000);

  it('openai-responses: sends the whole output array; the reasoning item ends invalid and gets no output item', async () => {
    const out = await outputs.get('openai-responses');
    expect(out).toMatch(/rs_1\s+-\s+invalid\s+This is a reasoning item/);
    expect(out).toMatch(/call_calc\s+calculate\s+ok\s+\{"value":42\}/);
    expect(out?.trim().split('\n').at(-1)).toBe(FINAL);
  }, 90_000);

  it('anthropic: sends the whole content array; the text block ends invalid and gets no tool_result', async () => {
    const out = await outputs.get('anthropic');
    expect(out).toMatch(/call-0\s+-\s+invalid\s+This is a text block/);
    expect(out).toMatch(/toolu_calc\s+calculate\s+ok\s+\{"value":42\}/);
    expect(out?.trim().split('\n').at(-1)).toBe(FINAL);
  }, 90_000);

  it('anthropic tool-search: defer_loading on all but find_tools, the search answered as tool_reference blocks, the found tool called directly', async () => {
    const out = await outputs.get('anthropic-tool-search');
    expect(out).toMatch(/^tools: (\d+), deferred: (\d+)$/m);
    const [, all, deferred] = /^tools: (\d+), deferred: (\d+)$/m.exec(out ?? '') ?? [];
    expect(Number(deferred)).toBe(Number(all) - 1);
    expect(out).toMatch(ran('toolu_search', 'find_tools'));
    expect(out).toMatch(/^\s+references: .*\bcalculate\b/m);
    expect(out).toMatch(/toolu_calc\s+calculate\s+ok\s+\{"value":42\}/);
    expect(out?.trim().split('\n').at(-1)).toBe(FINAL);
  }, 90_000);

  it('ai-sdk: leaves the call the SDK marked invalid to the SDK, and answers the rest by their called names', async () => {
    const out = await outputs.get('ai-sdk');
    expect(out).toMatch(/^step 1: 3 tool calls; the SDK answered read_files itself$/m);
    expect(out).not.toMatch(/call_unoffered/);
    expect(out).toMatch(/call_calc\s+calculate\s+ok\s+\{"value":42\}/);
    expect(out?.trim().split('\n').at(-1)).toBe(FINAL);
  }, 90_000);
});
