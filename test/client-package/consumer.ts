// A program outside the repo using the packed @tool-dispatch/client, compiled under --strict with
// each moduleResolution (client-package.test.ts writes the tsconfigs), run against the coordinator
// named on its command line.
import { type CallResult, type RoundItem, TdApiError, TdClient } from '@tool-dispatch/client';

const baseUrl = process.argv[2];
if (!baseUrl) throw new Error('usage: consumer.js <coordinator URL>');
const client = new TdClient({ baseUrl });

/** Never called: proves the client's types were found (an `any` would accept all three). */
export function typesAreChecked(): void {
  // @ts-expect-error: the format is one of the API's
  void client.tools('s', { format: 'yaml' });
  // @ts-expect-error: a round takes an array of calls
  void client.submitRound('s', 'r', { id: 'c1', name: 'x', args: {} });
  // @ts-expect-error: a result's status is one of the API's
  const status: CallResult['status'] = 'fine';
  void status;
}

const session = `consumer-${process.pid}`;
await client.putSession(session, { provider: 'openai' });
const { tools } = await client.tools(session, { format: 'openai' });
// A variable, as an SDK's array holds it: a literal would meet TypeScript's excess-property check.
const textBlock = { type: 'text', text: 'not a call' };
const calls: RoundItem[] = [
  { id: 'c1', type: 'function', function: { name: 'find_tools', arguments: '{"names":["calculate"]}' } },
  textBlock,
];
const round = await client.submitRound(session, 'run-1', calls, { format: 'openai' });
let missing = '';
try {
  await client.getSession('nobody-here');
} catch (e) {
  if (e instanceof TdApiError) missing = `${e.status} ${e.code}`;
}
console.log(
  JSON.stringify({
    tools: tools.map((t) => t.function.name).sort(),
    statuses: round.results.map((r) => r.status),
    answered: round.messages.map((m) => m.tool_call_id),
    missing,
  }),
);
