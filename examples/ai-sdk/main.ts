// An AI SDK (`ai`) agent loop whose tool calls tool-dispatch runs, one round per step
// (dispatch-step.ts). The model is `@ai-sdk/openai`'s Chat Completions model against a fake
// server on loopback, so it needs no key: run it from the repo with
//   npx tsx examples/ai-sdk/main.ts
import { createOpenAI } from '@ai-sdk/openai';
import { TdClient } from '@tool-dispatch/client';
import { generateText, jsonSchema, type ModelMessage, type ToolSet, tool } from 'ai';
import { startFakeChatCompletions } from '../openai-chat/fake-server.js';
import { MODEL, printResults, QUESTION } from '../support/script.js';
import { startDispatch } from '../support/start-dispatch.js';
import { dispatchStep } from './dispatch-step.js';

const model = await startFakeChatCompletions('unoffered');
const dispatch = await startDispatch();
try {
  const openai = createOpenAI({ baseURL: `${model.url}/v1`, apiKey: 'not-needed-for-the-fake-server' });
  const td = new TdClient({ baseUrl: dispatch.url });
  const session = 'ai-sdk-example';
  await td.putSession(session, { provider: 'openai' });
  const { tools, context } = await td.tools(session);
  // No `execute`: generateText stops after the step that calls them, and tool-dispatch runs them.
  const toolSet: ToolSet = Object.fromEntries(
    tools.map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.parameters) })]),
  );
  const messages: ModelMessage[] = [{ role: 'user', content: QUESTION }];
  for (let step = 1; step <= 5; step++) {
    const result = await generateText({ model: openai.chat(MODEL), system: context, messages, tools: toolSet });
    messages.push(...result.response.messages);
    if (result.toolCalls.length === 0) {
      console.log(`final answer: ${result.text}`);
      break;
    }
    const invalid = result.toolCalls.filter((c) => c.invalid).map((c) => c.toolName);
    console.log(
      `step ${step}: ${result.toolCalls.length} tool calls; the SDK answered ${invalid.join(', ') || 'none'} itself`,
    );
    const { parts, results } = await dispatchStep(result.toolCalls, { td, session, run: 'run-1' });
    printResults(results);
    messages.push({ role: 'tool', content: parts });
  }
} finally {
  await dispatch.stop();
  await model.close();
}
