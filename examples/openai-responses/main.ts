// An OpenAI Responses agent loop (the `openai` package) whose function calls tool-dispatch runs.
// Against a fake model server on loopback, so it needs no key: run it from the repo with
//   npx tsx examples/openai-responses/main.ts
import { TdClient } from '@tool-dispatch/client';
import OpenAI from 'openai';
import type { FunctionTool, ResponseInputItem, ResponseOutputItem } from 'openai/resources/responses/responses';
import { MODEL, printResults, QUESTION } from '../support/script.js';
import { startDispatch } from '../support/start-dispatch.js';
import { startFakeResponses } from './fake-server.js';

const model = await startFakeResponses();
const dispatch = await startDispatch();
try {
  const openai = new OpenAI({ baseURL: `${model.url}/v1`, apiKey: 'not-needed-for-the-fake-server' });
  const td = new TdClient({ baseUrl: dispatch.url });
  const session = 'openai-responses-example';
  await td.putSession(session, { provider: 'openai' });
  const { tools, context } = await td.tools(session, { format: 'openai-responses' });
  const offered: FunctionTool[] = tools.map((t) => ({ ...t, strict: false }));
  const input: ResponseInputItem[] = [{ role: 'user', content: QUESTION }];
  for (let turn = 1; turn <= 5; turn++) {
    const response = await openai.responses.create({
      model: MODEL,
      instructions: context,
      input,
      tools: offered,
      store: false,
    });
    // Stateless (store: false): the next turn's input repeats this turn's items.
    input.push(...response.output.flatMap(asInput));
    const calls = response.output.filter((item) => item.type === 'function_call' || item.type === 'custom_tool_call');
    if (calls.length === 0) {
      console.log(`final answer: ${response.output_text}`);
      break;
    }
    console.log(`turn ${turn}: ${response.output.length} output items, ${calls.length} of them calls`);
    // The whole ResponseOutputItem[] goes in as it is: the reasoning item ends invalid in
    // `results`, and `items` answers only the calls.
    const round = await td.submitRound(session, 'run-1', response.output, { format: 'openai-responses' });
    printResults(round.results);
    input.push(...round.items);
  }
} finally {
  await dispatch.stop();
  await model.close();
}

/** The output items this loop sends back as input (the SDK types a few output items apart from their input twins). */
function asInput(item: ResponseOutputItem): ResponseInputItem[] {
  switch (item.type) {
    case 'reasoning':
    case 'message':
    case 'function_call':
    case 'custom_tool_call':
      return [item];
    default:
      return [];
  }
}
