// An Anthropic Messages agent loop (`@anthropic-ai/sdk`) whose tool_use blocks tool-dispatch runs.
// Against a fake model server on loopback, so it needs no key: run it from the repo with
//   npx tsx examples/anthropic/main.ts
import Anthropic from '@anthropic-ai/sdk';
import type { MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages';
import { TdClient } from '@tool-dispatch/client';
import { MODEL, printResults, QUESTION } from '../support/script.js';
import { startDispatch } from '../support/start-dispatch.js';
import { startFakeMessages } from './fake-server.js';

const model = await startFakeMessages();
const dispatch = await startDispatch();
try {
  const anthropic = new Anthropic({ baseURL: model.url, apiKey: 'not-needed-for-the-fake-server' });
  const td = new TdClient({ baseUrl: dispatch.url });
  const session = 'anthropic-example';
  await td.putSession(session, { provider: 'anthropic' });
  const { tools, context } = await td.tools(session, { format: 'anthropic' });
  const offered: Tool[] = tools;
  const messages: MessageParam[] = [{ role: 'user', content: QUESTION }];
  for (let turn = 1; turn <= 5; turn++) {
    const reply = await anthropic.messages.create({
      model: MODEL,
      max_tokens: 1024,
      system: context,
      messages,
      tools: offered,
    });
    messages.push({ role: 'assistant', content: reply.content });
    if (reply.stop_reason !== 'tool_use') {
      const text = reply.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
      console.log(`final answer: ${text}`);
      break;
    }
    console.log(`turn ${turn}: ${reply.content.length} content blocks`);
    // The whole ContentBlock[] goes in as it is: text blocks end invalid in `results`, and
    // `content` holds a tool_result for each tool_use block only.
    const round = await td.submitRound(session, 'run-1', reply.content, { format: 'anthropic' });
    printResults(round.results);
    messages.push({ role: 'user', content: round.content });
  }
} finally {
  await dispatch.stop();
  await model.close();
}
