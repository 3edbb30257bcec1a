#!/usr/bin/env node
// A small MCP server over stdio (newline-delimited JSON-RPC, protocol 2025-06-18) for the tests:
// what the npm servers cannot be made to do on demand. Its tools:
//   sleep {ms}          waits, then answers; logs start and end (ms since the epoch) to $MCP_FAKE_LOG
//   set_tools {extra}   replaces the extra tools by those named, then sends tools/list_changed; with
//                       $MCP_FAKE_TOOLS_FILE, through that file, which every process of it watches
//   big {bytes}         answers one text block of that many bytes
//   fail {text}         answers isError with that text
//   ask {message}       sends elicitation/create to the client and answers what it got
//   dotted.name, dotted_name   two tools whose catalog names collide
// plus the extra tools (`extra_<n>`, each echoing its args). tools/list answers in pages of 4.
// $MCP_FAKE_START_DELAY_MS delays its answer to initialize (a server slow to start).
import { appendFileSync, existsSync, readFileSync, watchFile, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const LOG = process.env.MCP_FAKE_LOG;
const PAGE = 4;
const log = (entry) => {
  if (LOG) appendFileSync(LOG, `${JSON.stringify({ pid: process.pid, ...entry })}\n`);
};
const send = (msg) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);
const object = (properties, required = []) => ({ type: 'object', properties, required });

const TOOLS_FILE = process.env.MCP_FAKE_TOOLS_FILE;
let extra = (process.env.MCP_FAKE_EXTRA ?? 'extra_1,extra_2').split(',').filter(Boolean);
const readExtra = () => {
  if (TOOLS_FILE && existsSync(TOOLS_FILE)) extra = JSON.parse(readFileSync(TOOLS_FILE, 'utf8'));
};
readExtra();
if (TOOLS_FILE)
  watchFile(TOOLS_FILE, { interval: 100 }, () => {
    readExtra();
    send({ method: 'notifications/tools/list_changed' });
  });
const fixed = [
  { name: 'sleep', description: 'Waits ms milliseconds.', inputSchema: object({ ms: { type: 'number' } }, ['ms']) },
  {
    name: 'set_tools',
    description: 'Replaces the extra tools.',
    inputSchema: object({ extra: { type: 'array', items: { type: 'string' } } }, ['extra']),
  },
  { name: 'big', description: 'Answers a long text.', inputSchema: object({ bytes: { type: 'number' } }, ['bytes']) },
  { name: 'fail', description: 'Answers isError.', inputSchema: object({ text: { type: 'string' } }, ['text']) },
  { name: 'ask', description: 'Asks the user.', inputSchema: object({ message: { type: 'string' } }, ['message']) },
  { name: 'dotted.name', description: 'Collides with dotted_name.', inputSchema: object({}) },
  { name: 'dotted_name', description: 'Collides with dotted.name.', inputSchema: object({}) },
];
const tools = () => [
  ...fixed,
  ...extra.map((name) => ({
    name,
    description: `Echoes its args (${name}).`,
    inputSchema: object({ x: { type: 'number' } }),
  })),
];

let nextId = 1;
const waiting = new Map();
const request = (method, params) =>
  new Promise((resolve) => {
    const id = `s${nextId++}`;
    waiting.set(id, resolve);
    send({ id, method, params });
  });
const cancelled = new Set();

const text = (t) => ({ content: [{ type: 'text', text: t }] });

async function call(id, name, args) {
  switch (name) {
    case 'sleep': {
      const start = Date.now();
      log({ tool: 'sleep', start });
      await new Promise((r) => setTimeout(r, Number(args.ms)));
      log({ tool: 'sleep', start, end: Date.now(), cancelled: cancelled.has(id) });
      return text(`slept ${args.ms}`);
    }
    case 'set_tools':
      extra = args.extra;
      if (TOOLS_FILE) writeFileSync(TOOLS_FILE, JSON.stringify(extra));
      else setImmediate(() => send({ method: 'notifications/tools/list_changed' }));
      return text(
        `tools now: ${tools()
          .map((t) => t.name)
          .join(', ')}`,
      );
    case 'big':
      return text('x'.repeat(Number(args.bytes)));
    case 'fail':
      return { ...text(String(args.text)), isError: true };
    case 'ask': {
      const answer = await request('elicitation/create', {
        message: String(args.message),
        requestedSchema: object({ name: { type: 'string' } }, ['name']),
      });
      return { ...text(`answer: ${JSON.stringify(answer)}`), structuredContent: answer };
    }
    default:
      if (extra.includes(name) || name.startsWith('dotted')) return text(`${name} ${JSON.stringify(args)}`);
      return { ...text(`unknown tool ${name}`), isError: true };
  }
}

async function onRequest(msg) {
  const { id, method, params } = msg;
  if (method === 'initialize') {
    await new Promise((r) => setTimeout(r, Number(process.env.MCP_FAKE_START_DELAY_MS ?? 0)));
    return send({
      id,
      result: {
        protocolVersion: params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'td-fake', version: '1.0.0' },
      },
    });
  }
  if (method === 'ping') return send({ id, result: {} });
  if (method === 'tools/list') {
    const all = tools();
    const from = Number(params?.cursor ?? 0);
    const page = all.slice(from, from + PAGE);
    const next = from + PAGE < all.length ? { nextCursor: String(from + PAGE) } : {};
    return send({ id, result: { tools: page, ...next } });
  }
  if (method === 'tools/call') {
    log({ call: params.name, args: params.arguments ?? {}, meta: params._meta ?? null });
    return send({ id, result: await call(id, params.name, params.arguments ?? {}) });
  }
  send({ id, error: { code: -32601, message: `no method ${method}` } });
}

createInterface({ input: process.stdin }).on('line', (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (msg.method === 'notifications/cancelled') {
    cancelled.add(msg.params?.requestId);
    log({ cancelledRequest: msg.params?.requestId });
    return;
  }
  if (msg.method && msg.id !== undefined)
    onRequest(msg).catch((e) => send({ id: msg.id, error: { code: -32603, message: String(e) } }));
  else if (msg.id !== undefined && waiting.has(msg.id)) {
    waiting.get(msg.id)(msg.result ?? { error: msg.error });
    waiting.delete(msg.id);
  }
});
process.stdin.on('end', () => process.exit(0));
