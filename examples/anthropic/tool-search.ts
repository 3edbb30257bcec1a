// Anthropic's own tool search (API.md v1.2 `toolSearch: "anthropic"`) with `@anthropic-ai/sdk`:
// the tools array marks every tool but find_tools `defer_loading`, so the Messages API keeps
// their definitions out of the prompt; a find_tools result comes back as `tool_reference` blocks,
// which the API expands into the definitions it found; the model then calls the tool directly.
// Against a fake model server on loopback, so it needs no key: run it from the repo with
//   npx tsx examples/anthropic/tool-search.ts
import Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming, MessageParam, Tool } from '@anthropic-ai/sdk/resources/messages';
import { TdClient } from '@tool-dispatch/client';
import { MODEL, printResults, QUESTION } from '../support/script.js';
import { startDispatch } from '../support/start-dispatch.js';
import { startFakeToolSearch } from './tool-search-server.js';

const model = await startFakeToolSearch();
const dispatch = await startDispatch();
try {
  const anthropic = new Anthropic({ baseURL: model.url, apiKey: 'not-needed-for-the-fake-server' });
  const td = new TdClient({ baseUrl: dispatch.url });
  const session = 'anthropic-tool-search-example';
  await td.putSession(session, { provider: 'anthropic', toolSearch: 'anthropic' });
  const { tools, context } = await td.tools(session, { format: 'anthropic' });
  // Every tool, each with defer_loading but find_tools: the SDK's own Tool type takes them as they are.
  const offered: Tool[] = tools;
  console.log(`tools: ${offered.length}, deferred: ${offered.filter((t) => t.defer_loading).length}`);
  const messages: MessageParam[] = [{ role: 'user', content: QUESTION }];
  for (let turn = 1; turn <= 5; turn++) {
    const request: MessageCreateParamsNonStreaming = {
      model: MODEL,
      max_tokens: 1024,
      system: context,
      messages,
      tools: offered,
    };
    const reply = await anthropic.messages.create(request);
    messages.push({ role: 'assistant', content: reply.content });
    if (reply.stop_reason !== 'tool_use') {
      const text = reply.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
      console.log(`final answer: ${text}`);
      break;
    }
    const round = await td.submitRound(session, 'run-1', reply.content, { format: 'anthropic' });
    printResults(round.results);
    for (const block of round.content)
      if (Array.isArray(block.content))
        console.log(`  references: ${block.content.map((r) => r.tool_name).join(', ')}`);
    // tool_result blocks whose content is a string or tool_reference blocks: the SDK's ToolResultBlockParam.
    messages.push({ role: 'user', content: round.content });
  }
} finally {
  await dispatch.stop();
  await model.close();
}
