// An OpenAI Chat Completions agent loop (the `openai` package) whose tool calls tool-dispatch runs.
// Against a fake model server on loopback, so it needs no key: run it from the repo with
//   npx tsx examples/openai-chat/main.ts
import { TdClient } from '@tool-dispatch/client';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { MODEL, printResults, QUESTION } from '../support/script.js';
import { startDispatch } from '../support/start-dispatch.js';
import { startFakeChatCompletions } from './fake-server.js';

const model = await startFakeChatCompletions();
const dispatch = await startDispatch();
try {
  const openai = new OpenAI({ baseURL: `${model.url}/v1`, apiKey: 'not-needed-for-the-fake-server' });
  const td = new TdClient({ baseUrl: dispatch.url });
  const session = 'openai-chat-example';
  await td.putSession(session, { provider: 'openai' });
  const { tools, context } = await td.tools(session, { format: 'openai' });
  const offered: ChatCompletionTool[] = tools;
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: context },
    { role: 'user', content: QUESTION },
  ];
  for (let turn = 1; turn <= 5; turn++) {
    const completion = await openai.chat.completions.create({ model: MODEL, messages, tools: offered });
    const message = completion.choices[0]?.message;
    if (!message) throw new Error('the model answered no choice');
    messages.push(message);
    const calls = message.tool_calls ?? [];
    if (calls.length === 0) {
      console.log(`final answer: ${message.content}`);
      break;
    }
    console.log(`turn ${turn}: ${calls.length} tool calls`);
    // The SDK's ChatCompletionMessageToolCall[] goes in as it is (custom tool calls included).
    const round = await td.submitRound(session, 'run-1', calls, { format: 'openai' });
    printResults(round.results);
    messages.push(...round.messages);
  }
} finally {
  await dispatch.stop();
  await model.close();
}
